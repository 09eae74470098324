import type { Document } from 'bson';

import { CommandError, ErrorCode, refusal } from './errors.js';
import { compareValues, entriesOf, isDocument, isNumber, isPlainObject, numberOf, parseTypeList, typeName, typeRank } from './values.js';

type Check = (value: unknown) => boolean;

/** JSON Schema's `type` names and the BSON types each covers. */
const JSON_TYPES: Record<string, string[]> = {
  object: ['object'],
  array: ['array'],
  number: ['double', 'int', 'long', 'decimal'],
  boolean: ['bool'],
  string: ['string'],
  null: ['null'],
};

/** Keywords MongoDB's `$jsonSchema` omits from draft 4 (it refuses them too). */
const OMITTED = new Set(['$ref', '$schema', 'default', 'definitions', 'format', 'id']);
const ANNOTATIONS = new Set(['title', 'description']);

/**
 * Compiles a `$jsonSchema` document (draft 4 with MongoDB's `bsonType`, as
 * MongoDB accepts it) into a test over typed documents.
 */
export function compileJsonSchema(schema: Document): (doc: Document) => boolean {
  const check = compileSchema(schema);
  return (doc) => check(doc);
}

function fail(message: string): never {
  throw new CommandError(ErrorCode.FailedToParse, message);
}

function schemaObject(value: unknown, keyword: string): Document {
  if (!isPlainObject(value)) fail(`$jsonSchema keyword '${keyword}' must be an object`);
  return value;
}

function nonNegativeInteger(value: unknown, keyword: string): number {
  if (!isNumber(value) || !Number.isInteger(numberOf(value)) || numberOf(value) < 0) {
    fail(`$jsonSchema keyword '${keyword}' must be a representable non-negative integer`);
  }
  return numberOf(value);
}

function schemaList(value: unknown, keyword: string): Check[] {
  if (!Array.isArray(value) || value.length === 0) fail(`$jsonSchema keyword '${keyword}' must be a non-empty array`);
  return value.map((item) => compileSchema(schemaObject(item, keyword)));
}

function compileSchema(schema: Document): Check {
  const checks: Check[] = [];
  const onType = (types: string[], check: Check): void => {
    checks.push((value) => !types.includes(typeName(value)) || check(value));
  };
  const numeric = JSON_TYPES.number!;

  for (const [keyword, argument] of Object.entries(schema)) {
    if (OMITTED.has(keyword)) throw refusal(ErrorCode.FailedToParse, `$jsonSchema keyword '${keyword}'`);
    if (ANNOTATIONS.has(keyword)) continue;
    switch (keyword) {
      case 'bsonType': {
        const names = parseTypeList(argument, '$jsonSchema keyword bsonType');
        checks.push((value) => names.has(typeName(value)));
        break;
      }
      case 'type': {
        const names = (Array.isArray(argument) ? argument : [argument]).flatMap((name) => {
          if (name === 'integer') throw refusal(ErrorCode.FailedToParse, "$jsonSchema type 'integer'");
          const types = typeof name === 'string' ? JSON_TYPES[name] : undefined;
          if (!types) fail(`Unknown type name alias: ${String(name)}`);
          return types;
        });
        checks.push((value) => names.includes(typeName(value)));
        break;
      }
      case 'enum': {
        if (!Array.isArray(argument) || argument.length === 0) fail("$jsonSchema keyword 'enum' must be a non-empty array");
        checks.push((value) => argument.some((option) => typeRank(option) === typeRank(value) && compareValues(option, value) === 0));
        break;
      }
      case 'allOf': {
        const list = schemaList(argument, keyword);
        checks.push((value) => list.every((check) => check(value)));
        break;
      }
      case 'anyOf': {
        const list = schemaList(argument, keyword);
        checks.push((value) => list.some((check) => check(value)));
        break;
      }
      case 'oneOf': {
        const list = schemaList(argument, keyword);
        checks.push((value) => list.filter((check) => check(value)).length === 1);
        break;
      }
      case 'not': {
        const inner = compileSchema(schemaObject(argument, keyword));
        checks.push((value) => !inner(value));
        break;
      }
      case 'minimum':
      case 'maximum': {
        if (!isNumber(argument)) fail(`$jsonSchema keyword '${keyword}' must be a number`);
        const limit = numberOf(argument);
        const exclusive = schema[keyword === 'minimum' ? 'exclusiveMinimum' : 'exclusiveMaximum'] === true;
        onType(numeric, (value) => {
          const n = numberOf(value);
          if (keyword === 'minimum') return exclusive ? n > limit : n >= limit;
          return exclusive ? n < limit : n <= limit;
        });
        break;
      }
      case 'exclusiveMinimum':
      case 'exclusiveMaximum':
        if (typeof argument !== 'boolean') fail(`$jsonSchema keyword '${keyword}' must be a boolean`);
        if (!(keyword.replace('exclusiveM', 'm') in schema))
          fail(`$jsonSchema keyword '${keyword.replace('exclusiveM', 'm')}' must be a present if ${keyword} is present`);
        break;
      case 'multipleOf': {
        if (!isNumber(argument) || numberOf(argument) <= 0) fail("$jsonSchema keyword 'multipleOf' must have a positive value");
        const divisor = numberOf(argument);
        onType(numeric, (value) => {
          const quotient = numberOf(value) / divisor;
          return Number.isFinite(quotient) && Math.abs(quotient - Math.round(quotient)) < 1e-9;
        });
        break;
      }
      case 'minLength':
      case 'maxLength': {
        const limit = nonNegativeInteger(argument, keyword);
        onType(['string'], (value) => {
          const length = [...(value as string)].length;
          return keyword === 'minLength' ? length >= limit : length <= limit;
        });
        break;
      }
      case 'pattern': {
        if (typeof argument !== 'string') fail("$jsonSchema keyword 'pattern' must be a string");
        const regex = new RegExp(argument, 'u');
        onType(['string'], (value) => regex.test(value as string));
        break;
      }
      case 'minProperties':
      case 'maxProperties': {
        const limit = nonNegativeInteger(argument, keyword);
        onType(['object'], (value) => {
          const count = entriesOf(value as Document).length;
          return keyword === 'minProperties' ? count >= limit : count <= limit;
        });
        break;
      }
      case 'required': {
        if (!Array.isArray(argument) || argument.length === 0 || !argument.every((name) => typeof name === 'string')) {
          fail("$jsonSchema keyword 'required' must be a non-empty array of strings");
        }
        onType(['object'], (value) => argument.every((name) => entriesOf(value as Document).some(([key]) => key === name)));
        break;
      }
      case 'properties':
      case 'patternProperties':
      case 'additionalProperties':
        break;
      case 'dependencies': {
        const dependencies = Object.entries(schemaObject(argument, keyword)).map(([field, dependency]): [string, Check] => {
          if (Array.isArray(dependency)) {
            return [field, (value) => dependency.every((name) => entriesOf(value as Document).some(([key]) => key === name))];
          }
          return [field, compileSchema(schemaObject(dependency, keyword))];
        });
        onType(['object'], (value) =>
          dependencies.every(([field, check]) => !entriesOf(value as Document).some(([key]) => key === field) || check(value)),
        );
        break;
      }
      case 'items':
      case 'additionalItems':
        break;
      case 'minItems':
      case 'maxItems': {
        const limit = nonNegativeInteger(argument, keyword);
        onType(['array'], (value) => {
          const length = (value as unknown[]).length;
          return keyword === 'minItems' ? length >= limit : length <= limit;
        });
        break;
      }
      case 'uniqueItems': {
        if (typeof argument !== 'boolean') fail("$jsonSchema keyword 'uniqueItems' must be a boolean");
        if (argument) {
          onType(['array'], (value) => {
            const items = value as unknown[];
            return items.every((a, i) => items.every((b, j) => j <= i || typeRank(a) !== typeRank(b) || compareValues(a, b) !== 0));
          });
        }
        break;
      }
      default:
        fail(`Unknown $jsonSchema keyword: ${keyword}`);
    }
  }

  const properties = objectKeywords(schema);
  if (properties) onType(['object'], properties);
  const items = arrayKeywords(schema);
  if (items) onType(['array'], items);
  return (value) => checks.every((check) => check(value));
}

/** `properties`, `patternProperties` and `additionalProperties`, which decide together which fields are additional. */
function objectKeywords(schema: Document): Check | undefined {
  const { properties, patternProperties, additionalProperties } = schema;
  if (properties === undefined && patternProperties === undefined && additionalProperties === undefined) return undefined;
  const named = new Map(
    Object.entries(properties === undefined ? {} : schemaObject(properties, 'properties')).map(([k, v]) => [
      k,
      compileSchema(schemaObject(v, 'properties')),
    ]),
  );
  const patterns = Object.entries(patternProperties === undefined ? {} : schemaObject(patternProperties, 'patternProperties')).map(
    ([pattern, v]): [RegExp, Check] => [new RegExp(pattern, 'u'), compileSchema(schemaObject(v, 'patternProperties'))],
  );
  let additional: Check = () => true;
  if (additionalProperties === false) additional = () => false;
  else if (additionalProperties !== undefined && additionalProperties !== true) {
    additional = compileSchema(schemaObject(additionalProperties, 'additionalProperties'));
  }
  return (value) => {
    if (!isDocument(value)) return true;
    return entriesOf(value).every(([key, field]) => {
      const own = named.get(key);
      const matching = patterns.filter(([regex]) => regex.test(key));
      if (own && !own(field)) return false;
      if (!matching.every(([, check]) => check(field))) return false;
      return own !== undefined || matching.length > 0 || additional(field);
    });
  };
}

/** `items` (one schema or one per position) and `additionalItems`. */
function arrayKeywords(schema: Document): Check | undefined {
  const { items, additionalItems } = schema;
  if (items === undefined) return undefined;
  if (!Array.isArray(items)) {
    const each = compileSchema(schemaObject(items, 'items'));
    return (value) => (value as unknown[]).every(each);
  }
  const positional = items.map((item) => compileSchema(schemaObject(item, 'items')));
  let rest: Check = () => true;
  if (additionalItems === false) rest = () => false;
  else if (additionalItems !== undefined && additionalItems !== true)
    rest = compileSchema(schemaObject(additionalItems, 'additionalItems'));
  return (value) => (value as unknown[]).every((element, i) => (i < positional.length ? positional[i]!(element) : rest(element)));
}
