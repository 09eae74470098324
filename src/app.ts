import type { ApolloServer } from '@apollo/server';
import { expressMiddleware } from '@as-integrations/express5';
import express, { type Express, type Request, type RequestHandler } from 'express';

import type { Authenticator } from './auth/authenticator.js';
import { callerOf, requireCaller } from './auth/require-caller.js';
import type { CreateContext, RequestContext } from './context.js';
import type { Database } from './db/database.js';
import { methodNotAllowed } from './errors.js';
import { batchesOfAtMost } from './http/batches.js';
import { declaredBodyWithinLimit } from './http/body-limit.js';
import { graphqlFailures, legacyFailures, noSuchPath } from './http/failures.js';
import { healthRoutes, type ReadinessDetails } from './http/health.js';
import type { Shutdown } from './http/lifecycle.js';
import { GRAPHQL_PATH, SSE_PATH } from './http/route-paths.js';
import type { HttpStreams } from './http-streams/index.js';
import { admittedByMultipartStep } from './http-streams/multipart.js';
import { BODY_LIMIT_BYTES } from './limits.js';
import type { Logger } from './logger.js';
import type { GatewayMetrics } from './observability/metrics.js';
import { requestIdOf, requestLogging } from './observability/request-log.js';
import type { SpanIds } from './observability/tracing.js';
import { BATCH_OF_OPERATIONS } from './operations/observer.js';
import type { OperationPipeline } from './operations/pipeline.js';
import { type PlaygroundOptions, playgroundRouter } from './playground/playground.js';
import { inProcessRunner } from './rest/in-process-runner.js';
import { legacyEndpoints } from './rest/legacy-router.js';
import type { PreparedRoute } from './rest/prepared-routes.js';
import { credentialedGetIsPreflighted } from './security/credentialed-get.js';
import { crossOrigin } from './security/cross-origin.js';
import { notStored, securityHeaders } from './security/http-headers.js';
import type { RateLimits } from './security/rate-limit.js';
import { type TrustedDocuments, trustedDocumentsStep } from './security/trusted-documents.js';

export interface AppOptions {
  /** Started; serves `/graphql` over the pipeline. */
  apollo: ApolloServer<RequestContext>;
  /** The HTTP subscription doors: Server-Sent Events on their own path, multipart on `POST /graphql`. */
  httpStreams: HttpStreams;
  /** Runs the REST layer's operations, and observes `/graphql`'s. */
  pipeline: OperationPipeline;
  createContext: CreateContext;
  authenticator: Authenticator;
  rateLimits: RateLimits;
  /** Which documents `/graphql` runs by id, and whether it runs any other. */
  trustedDocuments: TrustedDocuments;
  /** The most operations one batched `POST /graphql` may carry. */
  batchMax: number;
  restRoutes: PreparedRoute[];
  /** The OpenAPI document of `restRoutes`, as served. */
  openApi: string;
  /** For readiness. */
  database: Pick<Database, 'ping'>;
  /** What `/readyz` reports besides its status: the open WebSockets and running subscriptions. */
  readinessDetails: ReadinessDetails;
  /** Readiness turns off when a stop begins. */
  shutdown: Pick<Shutdown, 'stopping'>;
  metrics: GatewayMetrics;
  logger: Logger;
  /** The ids of the span a request runs in, for its log line (`Tracing.activeSpanIds`). */
  activeSpanIds: () => SpanIds | undefined;
  /** Browser origins allowed to call the API (CORS); empty, none. */
  corsOrigins: readonly string[];
  /** Where the legacy endpoints are served besides the root, e.g. `/api`. */
  restBasePath: string | undefined;
  /** GraphiQL at `GET /graphql` for browsers; absent, no playground. */
  playground: PlaygroundOptions | undefined;
}

/**
 * The steps of the Express app (`expressApp`): every HTTP request passes them in order. Each
 * surface ends with its failure handler, which answers whatever its steps threw in that surface's shape.
 */
export function buildApp(app: Express, options: AppOptions): Express {
  const { pipeline, authenticator, rateLimits, createContext, metrics } = options;
  app.use(inTurn);
  app.use(securityHeaders, requestLogging(options.logger, options.activeSpanIds), metrics.recordRequests);

  // Probes: no credentials, no rate limit, not in the request log. Scrapes: not logged either.
  app.use(
    healthRoutes(
      { ping: (timeoutMs) => options.database.ping(timeoutMs), unavailable: 'database unavailable' },
      options.shutdown,
      options.readinessDetails,
    ),
  );
  // Preflights are answered before any limit: they carry no credentials and cost nothing, and a
  // refused preflight would reach the page as a network error, not as a 429 it could wait out.
  app.use(crossOrigin(options.corsOrigins));
  app.use(rateLimits.byAddress);
  if (metrics.endpoint) app.get('/metrics', metrics.endpoint);

  graphqlRoutes(app, options);

  app.get('/openapi.json', (_request, response) => {
    response.type('application/json').send(options.openApi);
  });
  app.use(
    ...legacyEndpoints(options.restRoutes, inProcessRunner(pipeline, authenticator, createContext), {
      afterAuthentication: [pipeline.admission.step('rest')],
      basePath: options.restBasePath,
    }),
  );

  app.use(noSuchPath, legacyFailures('error'));
  return app;
}

/**
 * `/graphql` and the Server-Sent Events door beside it. Endpoints are routes at their full path,
 * never handlers mounted at one: a request is named in the metrics and the log after the route it
 * matched (`request-end.ts`), whatever its spelling. Before the playground's router, which would
 * answer an OPTIONS itself.
 */
function graphqlRoutes(app: Express, options: AppOptions): void {
  const { apollo, pipeline, authenticator, createContext } = options;
  app.all(GRAPHQL_PATH, graphqlMethods);
  app.all(
    SSE_PATH,
    notStored,
    requireCaller(authenticator),
    pipeline.admission.step('sse'),
    declaredBodyWithinLimit,
    express.json({ limit: BODY_LIMIT_BYTES }),
    options.httpStreams.sse.handle,
    graphqlFailures,
  );
  if (options.playground) app.use(playgroundRouter(options.playground));
  app.all(
    GRAPHQL_PATH,
    notStored,
    requireCaller(authenticator),
    // A POST asking for multipart subscriptions is admitted by the multipart step, once its body says what it is.
    unless(admittedByMultipartStep, pipeline.admission.step('graphql')),
    credentialedGetIsPreflighted,
    declaredBodyWithinLimit,
    express.json({ limit: BODY_LIMIT_BYTES }),
    // Before the trusted-documents step, which would hand Apollo the text: the pipeline applies that rule itself.
    // Before the batch step, which admits a batch's further operations once the request is admitted.
    options.httpStreams.multipart,
    batchesOfAtMost(options.batchMax, pipeline.admission),
    trustedDocumentsStep(options.trustedDocuments),
    expressMiddleware(apollo, {
      context: async ({ req, res }) => {
        const requestId = requestIdOf(req);
        // A batch is no operation: each of its operations gets a context and an observation of its own (graphql/apollo.ts).
        if (Array.isArray(req.body)) return createContext(callerOf(res), requestId, BATCH_OF_OPERATIONS);
        const observation = pipeline.observer.start('graphql', requestId);
        res.locals.operation = observation;
        return createContext(callerOf(res), requestId, observation);
      },
    }),
    graphqlFailures,
  );
  // Failures thrown before the route (the per-address limit), in the same shape: Express skips routes once a step has failed.
  app.use(GRAPHQL_PATH, graphqlFailures);
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

/** `step`, for the requests `skips` does not pick; the others go on as they are. */
function unless(skips: (request: Request) => boolean, step: RequestHandler): RequestHandler {
  return (request, response, next) => (skips(request) ? next() : step(request, response, next));
}

/**
 * Other methods are refused before credentials are looked at, as on the legacy paths: among
 * them an `OPTIONS` that is not a preflight from an allowed origin (those are answered earlier).
 */
const graphqlMethods: RequestHandler = (request, _response, next) => {
  if (!['GET', 'HEAD', 'POST'].includes(request.method)) throw methodNotAllowed('GET, POST');
  next();
};
