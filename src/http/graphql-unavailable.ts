import type { ErrorRequestHandler } from 'express';
import { isDatabaseUnavailable } from '../db/database.js';

const BODY = JSON.stringify({
  errors: [{ message: 'database unavailable, try again later', extensions: { code: 'DATABASE_UNAVAILABLE' } }],
});

/**
 * Database outages met before GraphQL runs (checking an API key) answer like those met
 * inside an operation: HTTP 503 with code `DATABASE_UNAVAILABLE`.
 */
export const graphqlDatabaseUnavailable: ErrorRequestHandler = (error, _request, response, next) => {
  if (response.headersSent || !isDatabaseUnavailable(error)) return next(error);
  response.status(503).type('application/json').send(BODY);
};
