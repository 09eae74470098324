import { ApolloServer, type ApolloServerPlugin } from '@apollo/server';
import { unwrapResolverError } from '@apollo/server/errors';
import { ApolloServerPluginCacheControlDisabled } from '@apollo/server/plugin/disabled';
import { ApolloServerPluginInlineTraceDisabled } from '@apollo/server/plugin/disabled';
import { ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { ApolloServerPluginSchemaReportingDisabled } from '@apollo/server/plugin/disabled';
import { ApolloServerPluginUsageReportingDisabled } from '@apollo/server/plugin/disabled';
import type { GraphQLFormattedError, GraphQLSchema } from 'graphql';
import type { RequestContext } from '../context.js';
import { isDatabaseUnavailable } from '../db/database.js';
import { compiledExecution } from './compiled-execution.js';
import { DATABASE_UNAVAILABLE } from './errors.js';
import { maskInternalError, requestIdOnInternalErrors } from '../security/internal-errors.js';
import { operationLimitOptions } from '../security/operation-limits.js';
import { UnavailableError } from '../shared/unavailable-error.js';

export interface ApolloOptions {
  production: boolean;
  /** Metrics and logging. */
  plugins?: ApolloServerPlugin<RequestContext>[];
}

export function createApolloServer(schema: GraphQLSchema, options: ApolloOptions): ApolloServer<RequestContext> {
  const limits = operationLimitOptions<RequestContext>();
  return new ApolloServer<RequestContext>({
    // The schema, with queries run as compiled code (see compiled-execution.ts).
    gateway: compiledExecution(schema),
    introspection: !options.production,
    includeStacktraceInErrorResponses: !options.production,
    // No "Did you mean …?" naming fields the caller did not know about.
    hideSchemaDetailsFromClientErrors: options.production,
    parseOptions: limits.parseOptions,
    validationRules: limits.validationRules,
    allowBatchedHttpRequests: false,
    csrfPrevention: true,
    // The service stops on signals itself, in order; Apollo's own handler would re-raise the signal and kill it.
    stopOnTerminationSignals: false,
    formatError: options.production ? (formatted, error) => maskInternalError(formatError(formatted, error)) : formatError,
    // Nothing here is used, and each costs per request or per field; the playground is served separately.
    plugins: [
      ApolloServerPluginLandingPageDisabled(),
      ApolloServerPluginCacheControlDisabled(),
      ApolloServerPluginInlineTraceDisabled(),
      ApolloServerPluginUsageReportingDisabled(),
      ApolloServerPluginSchemaReportingDisabled(),
      databaseOutageStatus,
      limits.plugin,
      requestIdOnInternalErrors,
      ...(options.plugins ?? []),
    ],
  });
}

function formatError(formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError {
  const original = unwrapResolverError(error);
  if (original instanceof UnavailableError) {
    return { ...formatted, message: original.message, extensions: { ...formatted.extensions, code: 'UNAVAILABLE' } };
  }
  if (isDatabaseUnavailable(original)) {
    return {
      ...formatted,
      message: DATABASE_UNAVAILABLE.message,
      extensions: { ...formatted.extensions, code: DATABASE_UNAVAILABLE.code },
    };
  }
  return formatted;
}

/** An operation that failed because the database is unreachable answers HTTP 503, so clients retry later. */
const databaseOutageStatus: ApolloServerPlugin<RequestContext> = {
  async requestDidStart() {
    return {
      async willSendResponse({ response }) {
        const { errors } = response.body.kind === 'single' ? response.body.singleResult : response.body.initialResult;
        if (errors?.some((error) => error.extensions?.code === DATABASE_UNAVAILABLE.code)) response.http.status = 503;
      },
    };
  },
};
