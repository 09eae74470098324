import type { ErrorRequestHandler, Express, RequestHandler, Router } from 'express';

import type { Logger } from '../logger.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import { requestLogging } from '../observability/request-log.js';
import type { SpanIds } from '../observability/tracing.js';
import { crossOrigin } from '../security/cross-origin.js';
import { securityHeaders } from '../security/http-headers.js';
import { noSuchPath } from './failures.js';
import { type Dependency, healthRoutes, type ReadinessDetails } from './health.js';
import type { Shutdown } from './lifecycle.js';

/** What the HTTP app of the gateway and of the sidecar is made of, each part by name. */
export interface HttpAppParts {
  /** Where each request's log line goes, and the ids of the span it runs in (`Tracing.activeSpanIds`). */
  requestLog: { logger: Logger; activeSpanIds: () => SpanIds | undefined };
  /** Records every request; `endpoint` serves `GET /metrics`, when it is served. */
  metrics: Pick<GatewayMetrics, 'recordRequests' | 'endpoint'>;
  /** `/healthz` and `/readyz`: what readiness asks (the database, or the upstream), and when a stop began. */
  health: { dependency: Dependency; shutdown: Pick<Shutdown, 'stopping'>; details?: ReadinessDetails };
  /** Browser origins allowed to call the API (CORS); empty, none. */
  corsOrigins: readonly string[];
  /** The per-address limit, after CORS and before everything it protects; none in the sidecar, whose gateway limits callers. */
  addressLimit: RequestHandler | undefined;
  /** Mounts the GraphQL doors (`/graphql` and its streams), before the legacy endpoints; the gateway's alone. */
  graphql: ((app: Express) => void) | undefined;
  /**
   * The legacy REST endpoints (`rest/legacy-router.ts`), their OpenAPI document, as served at
   * `/openapi.json`, and the handler that answers what no surface answered, unknown paths included.
   */
  rest: { endpoints: readonly [Router, ErrorRequestHandler]; openApi: string; otherwise: ErrorRequestHandler };
}

/**
 * The steps every HTTP request of the gateway and of the sidecar passes, in order: its turn on
 * its connection, security headers, the request log and metrics, the probes, CORS, the
 * per-address limit, `/metrics`, the GraphQL doors, `/openapi.json`, the legacy endpoints, and
 * the answer for any other path. Each surface ends with its failure handler, which answers
 * whatever its steps threw in that surface's shape; what no surface answered is answered as a
 * legacy endpoint's `error`. Body limits are each route's, behind its credentials.
 */
export function buildHttpApp(app: Express, parts: HttpAppParts): Express {
  const { metrics, health } = parts;
  app.use(inTurn);
  // Request ids are forwarded upstream by the sidecar, so one id runs through both logs.
  app.use(securityHeaders, requestLogging(parts.requestLog.logger, parts.requestLog.activeSpanIds), metrics.recordRequests);
  // Probes: no credentials, no rate limit, not in the request log. Scrapes: not logged either.
  app.use(healthRoutes(health.dependency, health.shutdown, health.details));
  // Preflights are answered before any limit: they carry no credentials and cost nothing, and a
  // refused preflight would reach the page as a network error, not as a 429 it could wait out.
  app.use(crossOrigin(parts.corsOrigins));
  if (parts.addressLimit) app.use(parts.addressLimit);
  if (metrics.endpoint) app.get('/metrics', metrics.endpoint);
  parts.graphql?.(app);
  const { openApi } = parts.rest;
  app.get('/openapi.json', (_request, response) => {
    response.type('application/json').send(openApi);
  });
  app.use(...parts.rest.endpoints);
  app.use(noSuchPath, parts.rest.otherwise);
  return app;
}

/**
 * HTTP/1.1 requests pipelined on one connection run one at a time, each once the answers before
 * it are sent (Node queues their answers in order; a queued answer has no socket yet): nothing
 * runs, is admitted or held for an answer that cannot be sent yet. Behind an event stream, which
 * ends its connection (`Connection: close`), a request never runs: it goes with the connection,
 * unanswered, as RFC 9112 lets a server treat requests after a `close`.
 */
const inTurn: RequestHandler = (_request, response, next) => {
  if (response.socket !== null) return next();
  response.once('socket', () => next());
};
