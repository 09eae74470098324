import { userErrors } from '../shared/user-error.js';
import { integer, object, type JsonSchema } from './json-schema.js';

/** Parsing of the legacy endpoints' inputs. Nothing from a request reaches an operation unless it is a plain number. */

export type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string };

export const invalid = (problem: string): Parsed<never> => ({ ok: false, problem });
const valid = <T>(value: T): Parsed<T> => ({ ok: true, value });

/** GraphQL `Int` is a signed 32-bit integer. */
const MAX_INT = 2_147_483_647;
const DECIMAL = /^(0|[1-9][0-9]*)$/;

/**
 * The `id` query parameter: exactly once, plain decimal digits, within `Int`.
 * `id[]=1`, `id[$gt]=0`, `id=1&id=2`, `1.5`, `1e2`, `0x1`, ` 1` are all refused.
 */
export function parseIdParameter(query: URLSearchParams): Parsed<number> {
  const problem = userErrors.invalidId.message;
  for (const name of query.keys()) {
    if (name !== 'id' && name.startsWith('id[')) return invalid(problem);
  }
  const values = query.getAll('id');
  if (values.length !== 1 || !DECIMAL.test(values[0]!)) return invalid(problem);
  const id = Number(values[0]);
  return id <= MAX_INT ? valid(id) : invalid(problem);
}

/** A JSON body: the parsed value, or a problem when it is empty or not JSON. */
export function parseJsonBody(text: string): Parsed<unknown> {
  if (text.trim() === '') return invalid('request body must be a JSON object');
  try {
    return valid(JSON.parse(text) as unknown);
  } catch {
    return invalid('request body is not valid JSON');
  }
}

/** A whole number field of a JSON object body, within `Int`; range rules are the service's. */
export function integerField(body: unknown, field: string, problem: string): Parsed<number> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return invalid('request body must be a JSON object');
  const value = (body as Record<string, unknown>)[field];
  if (typeof value !== 'number' || !Number.isInteger(value) || Math.abs(value) > MAX_INT) return invalid(problem);
  return valid(value);
}

export interface LegacyRequest {
  query: URLSearchParams;
  /** The raw request body ('' for none). */
  body: string;
}

/** What a route reads from a request, and how it is described in the OpenAPI document. */
export interface RouteInput<TVariables> {
  parse(request: LegacyRequest): Parsed<TVariables>;
  parameters: { name: string; in: 'query'; required: boolean; description: string; schema: JsonSchema }[];
  requestBody?: JsonSchema;
}

export const noInput: RouteInput<Record<string, never>> = {
  parse: () => valid({}),
  parameters: [],
};

export const idInput: RouteInput<{ id: number }> = {
  parse({ query }) {
    const id = parseIdParameter(query);
    return id.ok ? valid({ id: id.value }) : id;
  },
  parameters: [
    {
      name: 'id',
      in: 'query',
      required: true,
      description: 'Conversation identifier: decimal digits, given once.',
      schema: { type: 'integer', minimum: 0, maximum: MAX_INT },
    },
  ],
};

export const quotaBodyInput: RouteInput<{ quota: number }> = {
  parse({ body }) {
    const json = parseJsonBody(body);
    if (!json.ok) return json;
    const quota = integerField(json.value, 'quota', userErrors.invalidQuota.message);
    return quota.ok ? valid({ quota: quota.value }) : quota;
  },
  parameters: [],
  requestBody: object({ quota: { ...integer, minimum: 1, maximum: 99_999, description: 'Number of points to buy.' } }),
};
