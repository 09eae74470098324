import type { Server } from 'node:http';

import { ApolloServer, type ApolloServerOptionsWithGateway, type ApolloServerPlugin } from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
} from '@apollo/server/plugin/disabled';
import { ApolloServerPluginDrainHttpServer } from '@apollo/server/plugin/drainHttpServer';
import { type DocumentNode, type GraphQLSchema, NoSchemaIntrospectionCustomRule, validate } from 'graphql';

import type { RequestContext } from '../context.js';
import { badRequest, invalidOperation } from '../errors.js';
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
  /** Apollo's automatic persisted queries (registered in the pipeline's document cache); off where only trusted documents run. */
  automaticPersistedQueries: boolean;
  /** The most operations one batched request may carry (checked before Apollo Server, `http/batches.ts`); 1: no batches. */
  batchMax: number;
  /** In production, the users who may introspect the schema nonetheless. */
  introspectionUsers: readonly number[];
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
    // Introspection is judged per caller on every request (`introspectionRule`), never by validation,
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
      pipelinePlugin(pipeline, introspectionRule(pipeline.schema, options)),
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
        executor: ({ document, operation, context, request, metrics }) =>
          operation === undefined
            ? execution.unresolved(document, request.operationName)
            : execution.execute({
                document,
                operation,
                context: contextOf(metrics, context as RequestContext),
                variables: request.variables,
              }),
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

/** Throws the refusal of a document the caller may not run: introspection, in production, for callers not listed. */
type IntrospectionRule = (document: DocumentNode, context: RequestContext) => void;

/**
 * Production's introspection rule, per caller: graphql-js's `NoSchemaIntrospectionCustomRule`
 * (what Apollo Server adds to validation with `introspection: false`), run on every request of a
 * caller not in INTROSPECTION_USERS. It is kept out of validation because the document cache holds
 * one validation per text for every caller: a document validated for a listed caller must not
 * thereby pass for another. Whether a document introspects depends on the document alone, so that
 * much is remembered per cached document.
 */
function introspectionRule(schema: GraphQLSchema, options: ApolloOptions): IntrospectionRule {
  if (!options.production) return () => {};
  const allowed = new Set(options.introspectionUsers);
  const refusals = new WeakMap<DocumentNode, string | null>();
  return (document, context) => {
    if (allowed.has(context.caller.userId)) return;
    let refusal = refusals.get(document);
    if (refusal === undefined) {
      refusal = validate(schema, document, [NoSchemaIntrospectionCustomRule])[0]?.message ?? null;
      refusals.set(document, refusal);
    }
    if (refusal !== null) throw invalidOperation(refusal);
  };
}

/**
 * The pipeline's stages that Apollo Server reaches through a plugin: the introspection rule and
 * the cost, once the operation and its variables are known (a refusal is an HTTP 400 before
 * anything runs); the observation of each request, which the door started with its context (or,
 * for each operation of a batch, this plugin with the operation's own context); the last step
 * over the answer's errors.
 */
function pipelinePlugin(pipeline: OperationPipeline, introspection: IntrospectionRule): ApolloServerPlugin<RequestContext> {
  return {
    async requestDidStart({ metrics, contextValue, requestIsBatched }) {
      if (requestIsBatched) {
        operationContexts.set(metrics, contextValue.forOperation(pipeline.observer.start('graphql', contextValue.requestId)));
      }
      const context = contextOf(metrics, contextValue);
      const { observation } = context;
      return {
        async didResolveOperation({ schema, document, operation, request }) {
          if (operation === undefined) return;
          observation.resolved(operation);
          introspection(document, context);
          checkOperationCost(schema, document, operation, request.variables);
        },
        async willSendResponse({ response, errors, contextValue }) {
          if (response.body.kind === 'single' && response.body.singleResult.errors !== undefined) {
            response.body.singleResult.errors = pipeline.format.finish(response.body.singleResult.errors, contextValue.requestId);
          }
          // Apollo's persisted-query answers ask for `no-cache`; an answer to a caller is never stored.
          response.http.headers.set('cache-control', 'no-store');
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
