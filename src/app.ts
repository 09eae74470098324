import type { ApolloServer } from '@apollo/server';
import { expressMiddleware } from '@as-integrations/express5';
import express, { type ErrorRequestHandler, type Express, type Request, type RequestHandler, type Router } from 'express';

import type { Authenticator } from './auth/authenticator.js';
import type { CreateContext, RequestContext } from './context.js';
import { methodNotAllowed } from './errors.js';
import { graphqlFailures } from './graphql/failure-answer.js';
import { admissionStep } from './http/admission.js';
import { authenticated, type CallerLocals } from './http/authenticated.js';
import { batchesOfAtMost } from './http/batches.js';
import { declaredBodyWithinLimit } from './http/body-limit.js';
import { type StepAfter, stepAfter } from './http/locals.js';
import { GRAPHQL_PATH, SSE_PATH } from './http/route-paths.js';
import type { HttpStreams } from './http-streams/index.js';
import { admittedByMultipartStep } from './http-streams/multipart.js';
import { BODY_LIMIT_BYTES } from './limits.js';
import { requestIdOf } from './observability/request-log.js';
import { BATCH_OF_OPERATIONS } from './operations/observer.js';
import type { OperationPipeline } from './operations/pipeline.js';
import { type PlaygroundOptions, playgroundRouter } from './playground/playground.js';
import { inProcessRunner } from './rest/in-process-runner.js';
import { legacyEndpoints } from './rest/legacy-router.js';
import type { PreparedRoute } from './rest/prepared-routes.js';
import { credentialedGetIsPreflighted } from './security/credentialed-get.js';
import { notStored } from './security/http-headers.js';
import { type TrustedDocuments, trustedDocumentsStep } from './security/trusted-documents.js';

/** What the gateway's GraphQL doors over HTTP are made of. */
export interface GraphqlDoorParts {
  /** Started; serves `/graphql` over the pipeline. */
  apollo: ApolloServer<RequestContext>;
  /** The HTTP subscription doors: Server-Sent Events on their own path, multipart on `POST /graphql`. */
  httpStreams: HttpStreams;
  /** Admits each request, and observes `/graphql`'s operations. */
  pipeline: Pick<OperationPipeline, 'admission' | 'observer'>;
  createContext: CreateContext;
  authenticator: Pick<Authenticator, 'authenticate'>;
  /** Which documents `/graphql` runs by id, and whether it runs any other. */
  trustedDocuments: TrustedDocuments;
  /** The most operations one batched `POST /graphql` may carry. */
  batchMax: number;
  /** GraphiQL at `GET /graphql` for browsers; absent, no playground. */
  playground: PlaygroundOptions | undefined;
}

/**
 * `/graphql` and the Server-Sent Events door beside it, as a part of the HTTP app (`http/app.ts`).
 * Endpoints are routes at their full path, never handlers mounted at one: a request is named in
 * the metrics and the log after the route it matched (`request-end.ts`), whatever its spelling.
 * Before the playground's router, which would answer an OPTIONS itself.
 */
export function graphqlDoors(parts: GraphqlDoorParts): (app: Express) => void {
  const { pipeline, authenticator } = parts;
  const apollo = apolloStep(parts);
  return (app) => {
    app.all(GRAPHQL_PATH, graphqlMethods);
    app.all(
      SSE_PATH,
      notStored,
      ...authenticated(
        authenticator,
        admissionStep(pipeline.admission, 'sse'),
        declaredBodyWithinLimit,
        express.json({ limit: BODY_LIMIT_BYTES }),
        parts.httpStreams.sse.handle,
      ),
      graphqlFailures,
    );
    if (parts.playground) app.use(playgroundRouter(parts.playground));
    app.all(
      GRAPHQL_PATH,
      notStored,
      ...authenticated(
        authenticator,
        // A POST asking for multipart subscriptions is admitted by the multipart step, once its body says what it is.
        unless(admittedByMultipartStep, admissionStep(pipeline.admission, 'graphql')),
        credentialedGetIsPreflighted,
        declaredBodyWithinLimit,
        express.json({ limit: BODY_LIMIT_BYTES }),
        // Before the trusted-documents step, which would hand Apollo the text: the pipeline applies that rule itself.
        // Before the batch step, which admits a batch's further operations once the request is admitted.
        parts.httpStreams.multipart,
        batchesOfAtMost(parts.batchMax, pipeline.admission),
        trustedDocumentsStep(parts.trustedDocuments),
        apollo,
      ),
      graphqlFailures,
    );
    // Failures thrown before the route (the per-address limit), in the same shape: Express skips routes once a step has failed.
    app.use(GRAPHQL_PATH, graphqlFailures);
  };
}

/** What the gateway's legacy endpoints are made of: the table, run in this process. */
export interface RestDoorParts {
  restRoutes: readonly PreparedRoute[];
  pipeline: OperationPipeline;
  authenticator: Pick<Authenticator, 'authenticate'>;
  createContext: CreateContext;
  /** Where the legacy endpoints are served besides the root, e.g. `/api`. */
  basePath: string | undefined;
}

/** The legacy endpoints, run in this process through the pipeline; each request admitted once its session names the caller. */
export function restDoor(parts: RestDoorParts): readonly [Router, ErrorRequestHandler] {
  return legacyEndpoints(parts.restRoutes, inProcessRunner(parts.pipeline, parts.authenticator, parts.createContext), {
    afterAuthentication: [admissionStep(parts.pipeline.admission, 'rest')],
    basePath: parts.basePath,
  });
}

/**
 * Apollo Server's Express integration behind authentication: each operation's context names
 * the caller the authenticating step accepted.
 */
function apolloStep({ apollo, pipeline, createContext }: GraphqlDoorParts): StepAfter<CallerLocals> {
  const middleware = expressMiddleware(apollo, {
    context: async ({ req, res }) => {
      // The response this step was handed: its locals hold `CallerLocals` (see `behind`).
      const { caller } = res.locals as CallerLocals;
      const requestId = requestIdOf(req);
      // A batch is no operation: each of its operations gets a context and an observation of its own (graphql/apollo.ts).
      if (Array.isArray(req.body)) return createContext(caller, requestId, BATCH_OF_OPERATIONS);
      const observation = pipeline.observer.start('graphql', requestId);
      res.locals.operation = observation;
      return createContext(caller, requestId, observation);
    },
  });
  return stepAfter((request, response, _locals, next) => middleware(request, response, next));
}

/** `step`, for the requests `skips` does not pick; the others go on as they are. */
function unless<L extends object>(skips: (request: Request) => boolean, step: StepAfter<L>): StepAfter<L> {
  return stepAfter((request, response, locals, next) => (skips(request) ? next() : step.run(request, response, locals, next)));
}

/**
 * Other methods are refused before credentials are looked at, as on the legacy paths: among
 * them an `OPTIONS` that is not a preflight from an allowed origin (those are answered earlier).
 */
const graphqlMethods: RequestHandler = (request, _response, next) => {
  if (!['GET', 'HEAD', 'POST'].includes(request.method)) throw methodNotAllowed('GET, POST');
  next();
};
