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
import { checkOperationCost, LIMIT_RULES, PARSE_OPTIONS } from '../operations/limits.js';
import type { OperationPipeline } from '../operations/pipeline.js';

export interface ApolloOptions {
  production: boolean;
  /** The HTTP server everything is served on: stopping Apollo Server drains it first. */
  httpServer: Server;
  /** Plugins of the operator's own, besides the pipeline's. */
  plugins?: ApolloServerPlugin<RequestContext>[];
}

/**
 * `/graphql`'s Apollo Server, built on the operation pipeline through its extension points: the
 * pipeline's document cache is its document store (parsed and validated with the same options and
 * rules), the pipeline's execute stage its executor, the format stage its `formatError`, and one
 * plugin adapts the rest (the cost, the observation, the last step over errors). Every request to
 * `/graphql` goes through Apollo Server's whole request pipeline, so every plugin sees it.
 */
export function createApolloServer(pipeline: OperationPipeline, options: ApolloOptions): ApolloServer<RequestContext> {
  return new ApolloServer<RequestContext>({
    gateway: pipelineExecutor(pipeline),
    documentStore: pipeline.documents.store,
    parseOptions: PARSE_OPTIONS,
    validationRules: [...LIMIT_RULES],
    introspection: !options.production,
    includeStacktraceInErrorResponses: !options.production,
    // No "Did you mean …?" naming fields the caller did not know about.
    hideSchemaDetailsFromClientErrors: options.production,
    allowBatchedHttpRequests: false,
    // Documents are named by id only as trusted documents (security/trusted-documents.ts), never registered by clients.
    persistedQueries: false,
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
 * The pipeline's execute stage as Apollo Server's executor (its gateway interface, the one it
 * offers for running operations another way). An unresolved operation is left to graphql-js,
 * whose answer names what is wrong.
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
        executor: ({ document, operation, context, request }) =>
          operation === undefined
            ? execution.unresolved(document, request.operationName)
            : execution.execute({ document, operation, context: context as RequestContext, variables: request.variables }),
      };
    },
    async stop() {},
  };
}

/**
 * The pipeline's stages that Apollo Server reaches through a plugin: the cost, once the operation
 * and its variables are known (a refusal is an HTTP 400 before anything runs); the observation of
 * each request, which the door started with its context; the last step over the answer's errors.
 */
function pipelinePlugin(pipeline: OperationPipeline): ApolloServerPlugin<RequestContext> {
  return {
    async requestDidStart({ contextValue: { observation } }) {
      return {
        async didResolveOperation({ schema, document, operation, request }) {
          if (operation === undefined) return;
          observation.resolved(operation);
          checkOperationCost(schema, document, operation, request.variables);
        },
        async willSendResponse({ response, errors, contextValue }) {
          if (response.body.kind === 'single' && response.body.singleResult.errors !== undefined) {
            response.body.singleResult.errors = pipeline.format.finish(response.body.singleResult.errors, contextValue.requestId);
          }
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
