import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

import type { RequestHandler } from 'express';

import type { Logger } from '../logger.js';
import { whenRequestEnds } from './request-end.js';
import type { SpanIds } from './tracing.js';

/** An incoming id is kept when it is short and printable, so it can be followed across services. */
const ACCEPTED_ID = /^[\w.:-]{1,128}$/;
/** Probes and scrapes are counted in the metrics but neither logged nor traced: they would drown both. */
export const QUIET_ROUTES: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics']);

declare module 'node:http' {
  interface IncomingMessage {
    /** The request's id: the caller's `X-Request-Id`, or a new one. */
    id: string;
    /** The service's logger, for lines about this request: each carries its `requestId` (see `failures.ts`). */
    log: Logger;
  }
}

/**
 * Gives every request an id (the caller's `X-Request-Id` or a new one), echoed in the
 * response, and the service's logger as `request.log`, and writes one line per request when it ends: id,
 * caller, route (and GraphQL operation), status, duration, and the ids of its trace and server
 * span when it is traced (`activeSpanIds`), so that logs and traces meet. Deliberately nothing from headers,
 * query strings or bodies: no credentials or contents reach the log. Nothing is built for the
 * line unless its level is logged. Both are plain properties: an accessor made per request (a
 * getter closure) would turn every request into a dictionary object, slow to read.
 */
export function requestLogging(logger: Logger, activeSpanIds: () => SpanIds | undefined = () => undefined): RequestHandler {
  return (request, response, next) => {
    const spanIds = activeSpanIds();
    const incoming = request.headers['x-request-id'];
    const requestId = typeof incoming === 'string' && ACCEPTED_ID.test(incoming) ? incoming : randomUUID();
    response.setHeader('X-Request-Id', requestId);
    request.id = requestId;
    request.log = logger;
    whenRequestEnds(request, response, ({ route, status, durationSeconds }) => {
      if (QUIET_ROUTES.has(route)) return;
      const failed = status >= 500;
      if (!logger.isLevelEnabled(failed ? 'error' : 'info')) return;
      const { locals } = response;
      const line = {
        requestId,
        method: request.method,
        route,
        operation: locals.operation?.operationName,
        status,
        durationMs: Math.round(durationSeconds * 1000),
        userId: locals.caller?.userId,
        ...spanIds,
      };
      if (failed) logger.error(line, 'request failed');
      else logger.info(line, 'request');
    });
    next();
  };
}

export function requestIdOf(request: IncomingMessage): string {
  return request.id;
}
