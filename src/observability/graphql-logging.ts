import type { ApolloServerPlugin, BaseContext } from '@apollo/server';
import type { Response } from 'express';
import { requestIdOf } from '../http/request-id.js';
import type { Logger } from '../logger.js';
import { codeOf, formattedErrorsOf } from './graphql-metrics.js';

const OPERATION_NAME = 'graphqlOperationName';
/** Where a `/graphql` context keeps its HTTP response. A property, not a WeakMap entry: Apollo copies the context per request. */
const RESPONSE = Symbol('http response');

export interface GraphQLLogging {
  /** Remembers which HTTP response a `/graphql` request's context belongs to; returns the context. */
  track<TContext extends object>(response: Response, context: TContext): TContext;
  /** Names the operation for the request log, and logs unexpected errors with their stack. */
  plugin: ApolloServerPlugin<BaseContext>;
}

export function graphqlLogging(logger: Logger): GraphQLLogging {
  return {
    track(response, context) {
      return Object.assign(context, { [RESPONSE]: response });
    },
    plugin: {
      async requestDidStart({ contextValue }) {
        // REST operations run without HTTP, so their contexts have no response.
        const response = (contextValue as { [RESPONSE]?: Response })[RESPONSE];
        return {
          async didResolveOperation({ operationName }) {
            if (response) response.locals[OPERATION_NAME] = operationName ?? 'anonymous';
          },
          async willSendResponse(requestContext) {
            formattedErrorsOf(requestContext.response).forEach((formatted, index) => {
              if (codeOf(formatted) !== 'INTERNAL_SERVER_ERROR') return;
              logger.error(
                {
                  err: requestContext.errors?.[index],
                  requestId: response && requestIdOf(response),
                  operation: requestContext.operationName ?? undefined,
                },
                'unexpected error in a GraphQL operation',
              );
            });
          },
        };
      },
    },
  };
}

export function operationNameOf(response: Response): string | undefined {
  return response.locals[OPERATION_NAME] as string | undefined;
}
