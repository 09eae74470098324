import type { Server } from 'node:http';

import { ApolloServer, type ApolloServerOptionsWithGateway, type ApolloServerPlugin } from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
} from '@apollo/server/plugin/disabled';
import { ApolloServerPluginDrainHttpServer } from '@apollo/server/plugin/drainHttpServer';

import type { RequestContext } from '../context.js';
import { badRequest } from '../errors.js';
import { DRAIN_GRACE_MS } from '../http/lifecycle.js';
import { GRAPHQL_PATH, SSE_PATH } from '../http/route-paths.js';
import { LIMIT_RULES, PARSE_OPTIONS } from '../operations/limits.js';
import type { OperationPipeline } from '../operations/pipeline.js';

export interface ApolloOptions {
  production: boolean;
  /** The HTTP server everything is served on: stopping Apollo Server drains it first. */
  httpServer: Server;
  /** Plugins of the operator's own, besides the pipeline's: they see `/graphql`'s requests that reach Apollo Server, no other door's (`ServiceOptions.operationHooks` sees every door's). */
  plugins?: ApolloServerPlugin<RequestContext>[];
  /** Apollo's automatic persisted queries (registered in the pipeline's document cache); off where only trusted documents run. */
  automaticPersistedQueries: boolean;
  /** The most operations one batched request may carry (checked before Apollo Server, `http/batches.ts`); 1: no batches. */
  batchMax: number;
}

/**
 * `/graphql`'s Apollo Server: the door's HTTP protocol (the request read, batches, automatic
 * persisted queries, the HTTP status of an answer) over the operation pipeline. The pipeline's
 * document cache is its document store (Apollo Server parses and validates on a miss, with the
 * same options and rules), `pipeline.run` its executor (the limits, the hooks, the execute stage
 * and the observation, in the pipeline's order), the format stage its `formatError`, and one
 * plugin gives each operation of a batch a context of its own and finishes every answer. Apollo
 * Server's plugins (the operator's included) see the `/graphql` requests that reach it: not those
 * refused before it (`app.ts`), nor the multipart subscriptions, nor any other door.
 */
export function createApolloServer(pipeline: OperationPipeline, options: ApolloOptions): ApolloServer<RequestContext> {
  return new ApolloServer<RequestContext>({
    gateway: pipelineExecutor(pipeline),
    documentStore: pipeline.documents.store,
    parseOptions: PARSE_OPTIONS,
    validationRules: [...LIMIT_RULES],
    // Introspection is judged per caller on every operation (`operations/introspection.ts`), never by validation,
    // whose results the document cache shares between callers.
    introspection: true,
    includeStacktraceInErrorResponses: !options.production,
    // No "Did you mean …?" naming fields the caller did not know about.
    hideSchemaDetailsFromClientErrors: options.production,
    allowBatchedHttpRequests: options.batchMax > 1,
    // Apollo's protocol, its store the one document cache; trusted documents are named by id before (security/trusted-documents.ts).
    persistedQueries: options.automaticPersistedQueries ? { cache: pipeline.documents.registered, ttl: null } : false,
    csrfPrevention: true,
    // The service stops on signals itself, in order; Apollo's own handler would re-raise the signal and kill it.
    stopOnTerminationSignals: false,
    formatError: pipeline.format.formatError,
    plugins: [
      // Nothing here is used, and each costs per request or per field; the playground is served separately.
      ApolloServerPluginLandingPageDisabled(),
      ApolloServerPluginCacheControlDisabled(),
      ApolloServerPluginInlineTraceDisabled(),
      // On stop: no new connections, idle keep-alive ones closed at once, busy ones once their answer is out.
      ApolloServerPluginDrainHttpServer({ httpServer: options.httpServer, stopGracePeriodMillis: DRAIN_GRACE_MS }),
      pipelinePlugin(pipeline),
      subscriptionsElsewhere,
      ...(options.plugins ?? []),
    ],
  });
}

/**
 * `pipeline.run` as Apollo Server's executor (its gateway interface, the one it offers for running
 * operations another way), handed the document and operation Apollo Server resolved: the pipeline
 * runs the rest as for the REST table, and Apollo Server formats and sends its result. A refusal
 * (the cost, a hook's) is a result with errors and no data, answered with its HTTP status before
 * anything ran. An unresolved operation is left to graphql-js, whose answer names what is wrong.
 */
function pipelineExecutor(pipeline: OperationPipeline): ApolloServerOptionsWithGateway<RequestContext>['gateway'] {
  const { schema, execution } = pipeline;
  return {
    onSchemaLoadOrUpdate(callback) {
      callback({ apiSchema: schema, coreSupergraphSdl: '' });
      return () => {};
    },
    async load() {
      return {
        executor: ({ source, document, operation, context, request, metrics }) =>
          operation === undefined
            ? execution.unresolved(document, request.operationName)
            : pipeline.run(
                { text: source, document, operation, operationName: request.operationName, variables: request.variables },
                contextOf(metrics, context as RequestContext),
              ),
      };
    },
    async stop() {},
  };
}

/**
 * The context of each operation of a batch (`RequestContext.forOperation`), by the one object
 * Apollo Server hands both its plugins and its executor for that operation alone: its metrics.
 */
const operationContexts = new WeakMap<object, RequestContext>();

/** The context an operation runs with: its own, in a batch; else the request's. */
function contextOf(metrics: object, requestContext: RequestContext): RequestContext {
  return operationContexts.get(metrics) ?? requestContext;
}

/**
 * What `/graphql` needs of Apollo Server's request lifecycle besides its executor: each operation
 * of a batch observed with a context of its own (the door started the request's observation with
 * its context); the format stage's last step over every answer's errors; and the observation of
 * an answer Apollo Server gave before the pipeline ran (a document that does not parse or
 * validate, an unknown persisted query, a subscription), which `pipeline.run` ends otherwise.
 */
function pipelinePlugin(pipeline: OperationPipeline): ApolloServerPlugin<RequestContext> {
  return {
    async requestDidStart({ metrics, contextValue, requestIsBatched }) {
      if (requestIsBatched) {
        operationContexts.set(metrics, contextValue.forOperation(pipeline.observer.start('graphql', contextValue.requestId)));
      }
      const { observation } = contextOf(metrics, contextValue);
      return {
        async willSendResponse({ response, errors, contextValue }) {
          if (response.body.kind === 'single' && response.body.singleResult.errors !== undefined) {
            response.body.singleResult.errors = pipeline.format.finish(response.body.singleResult.errors, contextValue.requestId);
          }
          // Apollo's persisted-query answers ask for `no-cache`; an answer to a caller is never stored.
          response.http.headers.set('cache-control', 'no-store');
          // Ends the observation of an answer given before the pipeline ran; one it ran is ended already.
          observation.finished(errors);
        },
      };
    },
  };
}

/**
 * A subscription that reaches Apollo Server came without the multipart `Accept` (which the
 * multipart door takes before it): run once, it would answer nothing useful. It is refused (400)
 * with the three ways a client can subscribe.
 */
const subscriptionsElsewhere: ApolloServerPlugin<RequestContext> = {
  async requestDidStart() {
    return {
      async didResolveOperation({ operation }) {
        if (operation?.operation === 'subscription') {
          throw badRequest(
            `subscriptions are served over WebSocket (graphql-transport-ws) on ${GRAPHQL_PATH}, over Server-Sent Events (graphql-sse) on ${SSE_PATH}, and on POST ${GRAPHQL_PATH} with Accept: multipart/mixed;subscriptionSpec="1.0"`,
          );
        }
      },
    };
  },
};
