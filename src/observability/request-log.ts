import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, Response } from 'express';
import { pinoHttp, type HttpLogger } from 'pino-http';
import type { Logger } from '../logger.js';
import { CLIENT_CLOSED_REQUEST, routePattern } from './request-end.js';

/** An incoming id is kept when it is short and printable, so it can be followed across services. */
const ACCEPTED_ID = /^[\w.:-]{1,128}$/;
/** Probes and scrapes are counted in the metrics but not logged: they would drown the log. */
const UNLOGGED_ROUTES = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * Gives every request an id (the caller's `X-Request-Id` or a new one), echoed in the
 * response and bound to `request.log`, and writes one line per request: id, caller, route
 * (and GraphQL operation), status, duration. Deliberately nothing from headers, query
 * strings or bodies: no credentials or contents reach the log.
 */
export function requestLogging(logger: Logger): HttpLogger {
  return pinoHttp({
    logger,
    genReqId(request, response) {
      const incoming = request.headers['x-request-id'];
      const id = typeof incoming === 'string' && ACCEPTED_ID.test(incoming) ? incoming : randomUUID();
      response.setHeader('X-Request-Id', id);
      return id;
    },
    customAttributeKeys: { reqId: 'requestId' },
    quietReqLogger: true,
    quietResLogger: true,
    customLogLevel: (request, response, error) => {
      if (UNLOGGED_ROUTES.has(routePattern(request as Request))) return 'silent';
      return error || response.statusCode >= 500 ? 'error' : 'info';
    },
    customSuccessMessage: () => 'request',
    customErrorMessage: () => 'request failed',
    customSuccessObject: (request, response, logged: { responseTime: number }) => requestLine(request, response, logged),
    customErrorObject: (request, response, _error, logged: { responseTime: number }) => requestLine(request, response, logged),
  });
}

function requestLine(request: IncomingMessage, response: ServerResponse, logged: { responseTime: number }): object {
  const { locals } = response as Response;
  return {
    method: request.method,
    route: routePattern(request as Request),
    operation: locals.graphqlOperationName,
    status: response.writableFinished ? response.statusCode : CLIENT_CLOSED_REQUEST,
    durationMs: logged.responseTime,
    userId: locals.caller?.userId,
  };
}

export function requestIdOf(request: IncomingMessage): string {
  return String(request.id);
}
