import type { ApolloServer } from '@apollo/server';
import type { Authenticator } from '../auth/authenticator.js';
import type { CreateContext, RequestContext } from '../context.js';
import type { OperationExecutor, OperationResult } from './executor.js';

/**
 * Runs operations in this process through the same Apollo Server as `/graphql`:
 * same schema, validation rules, limits, plugins and context, without HTTP.
 */
export function inProcessExecutor(
  apollo: ApolloServer<RequestContext>,
  authenticator: Authenticator,
  createContext: CreateContext,
): OperationExecutor {
  return {
    async open({ authorization, requestId }) {
      const caller = await authenticator.authenticate(authorization);
      if (caller === null) return null;
      return {
        caller,
        confirmCaller: async () => true,
        async run(operation, variables) {
          const response = await apollo.executeOperation(
            { query: operation.text, operationName: operation.name, variables },
            { contextValue: createContext(caller, requestId) },
          );
          if (response.body.kind !== 'single') throw new Error('incremental delivery is not used by the REST layer');
          return response.body.singleResult as OperationResult;
        },
      };
    },
  };
}
