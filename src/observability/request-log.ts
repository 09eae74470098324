import type { RequestHandler } from 'express';
import type { Caller } from '../auth/authenticator.js';
import { requestIdOf } from '../http/request-id.js';
import type { Logger } from '../logger.js';
import { operationNameOf } from './graphql-logging.js';
import { whenRequestEnds } from './request-end.js';

/**
 * One line per request: id, caller, route (and GraphQL operation), status, duration.
 * Deliberately nothing from headers, query strings or bodies: no credentials or contents reach the log.
 */
export function logRequests(logger: Logger): RequestHandler {
  return (request, response, next) => {
    whenRequestEnds(request, response, ({ route, status, durationSeconds }) => {
      const caller = response.locals.caller as Caller | undefined;
      const line = {
        requestId: requestIdOf(response),
        method: request.method,
        route,
        operation: operationNameOf(response),
        status,
        durationMs: Math.round(durationSeconds * 10_000) / 10,
        userId: caller?.userId,
      };
      if (status >= 500) logger.error(line, 'request failed');
      else logger.info(line, 'request');
    });
    next();
  };
}
