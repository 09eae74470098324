import type { GraphQLFormattedError } from 'graphql';

import { credentialOf } from '../auth/credential.js';
import { internal, responseTooLarge, unauthenticated, upstreamUnavailable } from '../errors.js';
import { failureOfAnswer } from './operation-failures.js';
import type { CallerRequest, CallerSession, OperationRunner, RouteOutcome } from './operation-runner.js';
import type { PreparedOperation } from './prepared-routes.js';

/** A GraphQL response as the upstream sends it. */
interface GraphQLAnswer {
  data?: Record<string, unknown> | null;
  errors?: readonly GraphQLFormattedError[];
}

/**
 * Resolves when `upstream` answers a GraphQL request (`{ __typename }`, without credentials)
 * with a GraphQL response within `timeoutMs`; a refusal of the missing credentials counts,
 * since only a GraphQL endpoint words it so. Rejects with a sentence saying what it got instead.
 */
export async function probeUpstream(upstream: URL, timeoutMs: number): Promise<void> {
  let response: Response;
  try {
    response = await fetch(upstream, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ __typename }' }),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    throw new Error(`upstream ${upstream.href} ${noAnswer(error, timeoutMs)}`, { cause: error });
  }
  const text = await boundedText(response, PROBE_MAX_BYTES).catch(() => undefined);
  const body: unknown = text === undefined || text === TOO_LARGE ? undefined : parsed(text);
  if (!isGraphQLResponse(body)) {
    const hint = upstream.pathname.endsWith('/graphql') ? '' : ': is /graphql missing from the URL?';
    throw new Error(`upstream ${upstream.href} answered HTTP ${response.status} without a GraphQL response${hint}`);
  }
}

/**
 * Why a request got no answer, as fetch reports it: a refused connection (nothing listens there)
 * is told as such, apart from a time limit that ran out and any other failure to connect.
 */
function noAnswer(error: unknown, timeoutMs: number): string {
  if (error instanceof DOMException && error.name === 'TimeoutError') return `did not answer within ${timeoutMs} ms`;
  const cause = error instanceof Error && error.cause instanceof Error ? (error.cause as NodeJS.ErrnoException) : undefined;
  if (cause?.code === 'ECONNREFUSED') return `refused the connection: nothing listens there (${cause.message})`;
  return `could not be reached (${cause?.message ?? (error instanceof Error ? error.message : String(error))})`;
}

/** What the answer to `{ __typename }` may take, at most: a few bytes, or a refusal of the missing credentials. */
const PROBE_MAX_BYTES = 65_536;

const TOO_LARGE = Symbol('too large');

/**
 * A body's text, read as it streams in, up to `maxBytes`: `TOO_LARGE` as soon as it says (in its
 * `Content-Length`) or shows (as it arrives) that it is longer, and the rest is never read, so a
 * request holds at most `maxBytes` of it. Rejects when the body cannot be read (cut short, timed out).
 */
async function boundedText(response: Response, maxBytes: number): Promise<string | typeof TOO_LARGE> {
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (declared > maxBytes || response.body === null) {
    await response.body?.cancel();
    return declared > maxBytes ? TOO_LARGE : '';
  }
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
    if (bytes > maxBytes) {
      await reader.cancel();
      return TOO_LARGE;
    }
    chunks.push(value);
  }
  return new TextDecoder().decode(Buffer.concat(chunks, bytes));
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isGraphQLResponse(body: unknown): body is GraphQLAnswer {
  return typeof body === 'object' && body !== null && ('data' in body || Array.isArray((body as { errors?: unknown }).errors));
}

/**
 * Sidecar mode: forwards each operation to a remote GraphQL endpoint with the caller's
 * `Authorization`, the request id (one id across both logs) and the client's address
 * (`X-Forwarded-For`, for the gateway's per-address limit when it trusts this proxy).
 * Operations are named by their document id, which the gateway trusts even where it runs
 * only trusted documents. `confirmCaller` is the operation that checks credentials alone.
 *
 * An answer is read up to `maxBytes` (RESPONSE_MAX_BYTES): one longer is refused as too large, as
 * the gateway refuses one, without reading the rest, so that the sidecar holds at most that much of
 * an answer whatever its upstream sends.
 */
export function remoteRunner(upstream: URL, timeoutMs: number, maxBytes: number, confirmCaller: PreparedOperation): OperationRunner {
  async function post(
    caller: CallerRequest & { authorization: string },
    operation: PreparedOperation,
    variables: Record<string, unknown>,
  ): Promise<RouteOutcome> {
    let response: Response;
    try {
      response = await fetch(upstream, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: caller.authorization,
          'x-request-id': caller.requestId,
          ...(caller.clientAddress ? { 'x-forwarded-for': caller.clientAddress } : {}),
        },
        body: JSON.stringify({ documentId: operation.id, operationName: operation.name, variables }),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      throw upstreamUnavailable(`upstream ${upstream.origin} ${noAnswer(error, timeoutMs)}`, error);
    }
    if (response.status === 401) return { failure: unauthenticated() };
    let text: string | typeof TOO_LARGE;
    try {
      text = await boundedText(response, maxBytes);
    } catch (error) {
      throw upstreamUnavailable(`upstream ${upstream.origin} answered ${response.status} without a GraphQL body`, error);
    }
    if (text === TOO_LARGE) return { failure: responseTooLarge(maxBytes) };
    const body = parsed(text);
    if (!isGraphQLResponse(body))
      throw upstreamUnavailable(`upstream ${upstream.origin} answered ${response.status} without a GraphQL body`);
    const error = body.errors?.[0];
    if (error !== undefined) return { failure: failureOfAnswer(error) };
    return body.data ? { data: body.data } : { failure: internal(new Error(`upstream answered ${operation.name} with no data`)) };
  }

  return {
    async open(request) {
      const { authorization } = request;
      // Credentials are checked upstream. One missing or shaped like no credential is refused here,
      // as the gateway would refuse it: before its body is read, and without a round trip.
      if (authorization === undefined || credentialOf(authorization) === null) return null;
      const caller = { ...request, authorization };
      const session: CallerSession = {
        run: (operation, variables) => post(caller, operation, variables),
        confirmCaller: async () => {
          const outcome = await post(caller, confirmCaller, {});
          return !('failure' in outcome && outcome.failure.kind === 'unauthenticated');
        },
      };
      return session;
    },
  };
}
