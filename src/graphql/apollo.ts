import type { Server } from 'node:http';

import { ApolloServer, type ApolloServerPlugin } from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
  ApolloServerPluginSchemaReportingDisabled,
  ApolloServerPluginUsageReportingDisabled,
} from '@apollo/server/plugin/disabled';
import { ApolloServerPluginDrainHttpServer } from '@apollo/server/plugin/drainHttpServer';
import type { GraphQLSchema } from 'graphql';

import type { RequestContext } from '../context.js';
import { badRequest, graphqlErrorRendering } from '../errors.js';
import { operationLimitOptions } from '../security/operation-limits.js';
import { compiledExecution, type ExecutionObserver } from './compiled-execution.js';
import type { CompiledOperationLookup } from './compiled-queries.js';

/** Once stopping, how long in-flight requests may take before their connections are closed anyway. */
const SHUTDOWN_GRACE_MS = 10_000;

export interface ApolloOptions {
  production: boolean;
  /** The HTTP server everything is served on: stopping Apollo Server drains it first. */
  httpServer: Server;
  /** Metrics and logging. */
  plugins: ApolloServerPlugin<RequestContext>[];
  /** Told which executor ran each operation. */
  observeExecution: ExecutionObserver;
  /** Where queries find their compiled code (shared with `/graphql`'s seen queries). */
  compiledFor: CompiledOperationLookup;
}

export function createApolloServer(schema: GraphQLSchema, options: ApolloOptions): ApolloServer<RequestContext> {
  const limits = operationLimitOptions<RequestContext>();
  const errors = graphqlErrorRendering(options.production);
  return new ApolloServer<RequestContext>({
    // The schema, with queries run as compiled code (see compiled-execution.ts).
    gateway: compiledExecution(schema, options.compiledFor, options.observeExecution),
    introspection: !options.production,
    includeStacktraceInErrorResponses: !options.production,
    // No "Did you mean …?" naming fields the caller did not know about.
    hideSchemaDetailsFromClientErrors: options.production,
    parseOptions: limits.parseOptions,
    validationRules: limits.validationRules,
    allowBatchedHttpRequests: false,
    // Documents are named by id only as trusted documents (security/trusted-documents.ts), never registered by clients.
    persistedQueries: false,
    csrfPrevention: true,
    // The service stops on signals itself, in order; Apollo's own handler would re-raise the signal and kill it.
    stopOnTerminationSignals: false,
    formatError: errors.formatError,
    plugins: [
      // Nothing here is used, and each costs per request or per field; the playground is served separately.
      ApolloServerPluginLandingPageDisabled(),
      ApolloServerPluginCacheControlDisabled(),
      ApolloServerPluginInlineTraceDisabled(),
      ApolloServerPluginUsageReportingDisabled(),
      ApolloServerPluginSchemaReportingDisabled(),
      // On stop: no new connections, idle keep-alive ones closed at once, busy ones once their answer is out.
      ApolloServerPluginDrainHttpServer({ httpServer: options.httpServer, stopGracePeriodMillis: SHUTDOWN_GRACE_MS }),
      limits.plugin,
      subscriptionsOverWebSocket,
      errors.plugin,
      ...options.plugins,
    ],
  });
}

/** Over HTTP a subscription would run once and answer nothing useful: it is refused (400) with where to go. */
const subscriptionsOverWebSocket: ApolloServerPlugin<RequestContext> = {
  async requestDidStart() {
    return {
      async didResolveOperation({ operation }) {
        if (operation?.operation === 'subscription') {
          throw badRequest('subscriptions are served over WebSocket (graphql-transport-ws) on this same /graphql endpoint');
        }
      },
    };
  },
};
