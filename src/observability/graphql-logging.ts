import type { ApolloServerPlugin } from '@apollo/server';
import type { Response } from 'express';
import type { GraphQLFormattedError } from 'graphql';

import type { RequestContext } from '../context.js';
import { isInternal } from '../errors.js';
import type { Logger } from '../logger.js';
import { formattedErrorsOf } from './graphql-metrics.js';
import { boundedOperationName } from './request-labels.js';

/** Where a `/graphql` context keeps its HTTP response. A property, not a WeakMap entry: Apollo copies the context per request. */
const RESPONSE = Symbol('http response');

export interface GraphQLLogging {
  /** Remembers which HTTP response a `/graphql` request's context belongs to; returns the context. */
  track<TContext extends object>(response: Response, context: TContext): TContext;
  /** Names the operation for the request log, and logs unexpected errors with their stack. */
  plugin: ApolloServerPlugin<RequestContext>;
  /** Logs the unexpected errors among an answer's `formatted` errors, with the `errors` they were made from. */
  logUnexpected(
    formatted: readonly GraphQLFormattedError[],
    errors: readonly Error[] | undefined,
    requestId: string,
    operationName: string | undefined,
  ): void;
}

export function graphqlLogging(logger: Logger): GraphQLLogging {
  const logUnexpected: GraphQLLogging['logUnexpected'] = (formatted, errors, requestId, operationName) => {
    formatted.forEach((answer, index) => {
      if (!isInternal(answer)) return;
      logger.error(
        { err: errors?.[index], requestId, operation: operationName ? boundedOperationName(operationName) : undefined },
        'unexpected error in a GraphQL operation',
      );
    });
  };
  return {
    track(response, context) {
      return Object.assign(context, { [RESPONSE]: response });
    },
    logUnexpected,
    plugin: {
      async requestDidStart({ contextValue }) {
        // REST operations run without HTTP, so their contexts have no response.
        const response = (contextValue as { [RESPONSE]?: Response })[RESPONSE];
        return {
          async didResolveOperation({ operationName }) {
            if (response) response.locals.graphqlOperationName = boundedOperationName(operationName ?? 'anonymous');
          },
          async willSendResponse(requestContext) {
            logUnexpected(
              formattedErrorsOf(requestContext.response),
              requestContext.errors,
              requestContext.contextValue.requestId,
              requestContext.operationName ?? undefined,
            );
          },
        };
      },
    },
  };
}
