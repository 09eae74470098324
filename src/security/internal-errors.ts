import type { ApolloServerPlugin } from '@apollo/server';
import type { GraphQLFormattedError } from 'graphql';
import type { RequestContext } from '../context.js';

const INTERNAL = 'INTERNAL_SERVER_ERROR';

/**
 * In production an unexpected failure shows only its code and where it happened:
 * its message may name internals (a driver error, a field that broke). Errors with
 * any other code were raised on purpose for the client and pass unchanged.
 */
export function maskInternalError(formatted: GraphQLFormattedError): GraphQLFormattedError {
  if (formatted.extensions?.code !== INTERNAL) return formatted;
  return { message: 'internal server error', ...(formatted.path && { path: formatted.path }), extensions: { code: INTERNAL } };
}

/** Puts the request id on every internal error, so a report can be matched with its log line. */
export const requestIdOnInternalErrors: ApolloServerPlugin<RequestContext> = {
  async requestDidStart() {
    return {
      async willSendResponse({ response, contextValue }) {
        const { requestId } = contextValue;
        if (response.body.kind !== 'single' || requestId === undefined) return;
        const result = response.body.singleResult;
        if (result.errors === undefined) return;
        result.errors = result.errors.map((error) =>
          error.extensions?.code === INTERNAL ? { ...error, extensions: { ...error.extensions, requestId } } : error,
        );
      },
    };
  },
};
