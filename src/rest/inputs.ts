import type { Request } from 'express';
import { GRAPHQL_MAX_INT as MAX_INT } from 'graphql';
import { z } from 'zod';

import { purchaseIdempotencyKey, purchaseQuota } from '../billing/purchase-rules.js';
import { badRequest, badUserInput, type Failure } from '../errors.js';
import { MAX_CONVERSATION_NAME_LENGTH } from '../limits.js';
import { userErrors } from '../shared/user-error.js';
import type { RouteInput } from './route.js';

const NOT_AN_OBJECT = 'request body must be a JSON object';

/**
 * The `id` query parameter: plain decimal digits within `Int`, given once. Nothing from a request
 * reaches an operation unless it is a plain number: `id[]=1`, `id[$gt]=0`, `id=1&id=2`, `1.5`,
 * `1e2`, `0x1`, ` 1` are all refused.
 */
export const conversationIdQuery = z.object({
  id: z
    .string({ error: userErrors.invalidId.message })
    .regex(/^(0|[1-9][0-9]*)$/, { error: userErrors.invalidId.message })
    .transform(Number)
    .pipe(z.number().max(MAX_INT, { error: userErrors.invalidId.message }))
    .describe(`Conversation identifier: decimal digits, at most ${MAX_INT}, given once.`),
});

/**
 * The body of a rename. The name's rules (length, not blank) belong to the conversations service,
 * which answers "invalid name" over GraphQL and REST alike; the document states them for clients.
 * Other fields are ignored.
 */
export const renameBody = z.object(
  {
    id: z
      .int({ error: userErrors.invalidId.message })
      .min(0, { error: userErrors.invalidId.message })
      .max(MAX_INT, { error: userErrors.invalidId.message })
      .describe('Conversation identifier.'),
    name: z
      .string({ error: userErrors.invalidName.message })
      .meta({ minLength: 1, maxLength: MAX_CONVERSATION_NAME_LENGTH, pattern: '\\S' })
      .describe(`The new title, stored as given: 1 to ${MAX_CONVERSATION_NAME_LENGTH} characters, not only white space.`),
  },
  { error: NOT_AN_OBJECT },
);

/** The body of a purchase, by the purchase's own rules (`billing/purchase-rules.ts`). Other fields are ignored. */
export const purchaseBody = z.object(
  {
    quota: purchaseQuota.describe('Number of points to buy.'),
  },
  { error: NOT_AN_OBJECT },
);

/**
 * The headers of a purchase. `Idempotency-Key` is optional; a header sent twice arrives as two
 * values joined by ", ", which no key can be (it holds no space), so it is refused.
 */
export const purchaseHeaders = z
  .object({
    'idempotency-key': purchaseIdempotencyKey
      .optional()
      .describe(
        'Makes the buy safe to retry (a timeout, a dropped connection): 1 to 255 visible ASCII characters chosen by the ' +
          'client, one per intent to buy, such as a UUID. The same caller sending the same key again within 24 hours buys ' +
          'nothing more and gets the first answer (or, while that purchase is still open, "payment not confirmed yet"); the ' +
          'same key with another `quota` is refused and nothing is bought. Without it, every request is a new purchase.',
      ),
  })
  .transform(({ 'idempotency-key': idempotencyKey }) => (idempotencyKey === undefined ? {} : { idempotencyKey }));

type Read<T> = { variables: T } | { failure: Failure };

/** A route's variables from the request, or the failure the endpoint answers instead (HTTP 200, `status: false`). */
export function readInput<T>(input: RouteInput<T>, request: Request): Read<T> {
  const read = readMainInput(input, request);
  if ('failure' in read || input.headers === undefined) return read;
  const headers = parse(input.headers, request.headers);
  return 'failure' in headers ? headers : { variables: { ...read.variables, ...headers.variables } };
}

function readMainInput<T>(input: RouteInput<T>, request: Request): Read<T> {
  if (input.from === 'nothing') return { variables: {} as T };
  if (input.from === 'query') return parse(input.schema, queryParameters(new URLSearchParams(request.originalUrl.split('?')[1] ?? '')));
  const text = typeof request.body === 'string' ? request.body : '';
  if (text.trim() === '') return { failure: badRequest(NOT_AN_OBJECT) };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { failure: badRequest('request body is not valid JSON') };
  }
  return parse(input.schema, value);
}

function parse<T>(schema: z.ZodType<T>, value: unknown): Read<T> {
  const parsed = schema.safeParse(value);
  return parsed.success ? { variables: parsed.data } : { failure: badUserInput(parsed.error.issues[0]!.message) };
}

/**
 * Query parameters by name. A name given more than once, or with brackets (`id[]`, `id[$gt]`,
 * which some frameworks read as arrays and objects), has an array of values, never a single one.
 */
function queryParameters(query: URLSearchParams): Record<string, string | string[]> {
  const parameters: Record<string, string | string[]> = Object.create(null);
  for (const [key, value] of query) {
    const name = key.replace(/\[.*$/, '');
    const earlier = parameters[name] === undefined ? [] : [parameters[name]].flat();
    parameters[name] = earlier.length === 0 && name === key ? value : [...earlier, value];
  }
  return parameters;
}
