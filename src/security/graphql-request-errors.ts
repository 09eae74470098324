import type { ErrorRequestHandler } from 'express';
import { isDatabaseUnavailable } from '../db/database.js';
import { DATABASE_UNAVAILABLE } from '../graphql/errors.js';
import { graphqlRateLimitedBody, RateLimitedError, sendRateLimited } from './rate-limit.js';

/**
 * Failures on `/graphql` before Apollo Server sees the request, answered as
 * GraphQL error bodies: the database unreachable while checking an API key (503,
 * as inside an operation), the caller over its rate limit (429), a body over the
 * size limit (413), a body that is not JSON or not readable (400).
 */
export const graphqlRequestErrors: ErrorRequestHandler = (error: unknown, _request, response, next) => {
  if (response.headersSent) return next(error);
  if (isDatabaseUnavailable(error)) {
    const { code, message } = DATABASE_UNAVAILABLE;
    return response.status(503).json({ errors: [{ message, extensions: { code } }] });
  }
  if (error instanceof RateLimitedError) return sendRateLimited(response, error, graphqlRateLimitedBody(error));
  // body-parser's errors carry a 4xx `status`, a `type` and, when too large, the `limit` in bytes.
  const { status, type, limit } = error as { status?: unknown; type?: unknown; limit?: unknown };
  if (typeof status !== 'number' || status < 400 || status >= 500) return next(error);
  const message =
    status === 413
      ? `request body is larger than the limit of ${String(limit)} bytes`
      : type === 'entity.parse.failed'
        ? 'request body is not valid JSON'
        : 'request body could not be read';
  response.status(status).json({ errors: [{ message, extensions: { code: 'BAD_REQUEST' } }] });
};
