/** The small subset of JSON Schema (2020-12, as used by OpenAPI 3.1) that the REST layer's docs need. */
export type JsonSchema = Record<string, unknown>;

export const object = (properties: Record<string, JsonSchema>, required = Object.keys(properties)): JsonSchema => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
});

export const constant = (value: unknown): JsonSchema => ({ const: value });
export const string: JsonSchema = { type: 'string' };
export const integer: JsonSchema = { type: 'integer' };
export const number: JsonSchema = { type: 'number' };
export const boolean: JsonSchema = { type: 'boolean' };
export const arrayOf = (items: JsonSchema): JsonSchema => ({ type: 'array', items });
