import { type Failure, type HttpAnswer, statusOf } from '../errors.js';

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
