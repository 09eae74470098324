import { type Failure, type HttpAnswer, statusOf } from '../errors.js';
import { failureHandler } from '../http/failures.js';
import { inPreferredMediaType } from '../http/json-answer.js';

/**
 * A failure outside any operation (credentials, limits, the request body), as a GraphQL response:
 * the kind's status and headers, one error with its message and extensions (an internal one
 * names the request, to be matched with its log line), without the HTTP details Apollo Server reads.
 */
export function graphqlAnswer(failure: Failure, requestId: string): HttpAnswer {
  const { http: _http, ...extensions } = failure.extensions;
  return {
    status: statusOf(failure),
    headers: failure.headers,
    body: { errors: [{ message: failure.message, extensions: failure.kind === 'internal' ? { ...extensions, requestId } : extensions }] },
  };
}

/** Failures on `/graphql` before Apollo Server runs (credentials, limits, the body), as GraphQL responses. */
export const graphqlFailures = failureHandler((failure, requestId, request) =>
  inPreferredMediaType(graphqlAnswer(failure, requestId), request),
);
