import type { ApolloServer } from '@apollo/server';

import type { Authenticator } from '../auth/authenticator.js';
import type { CreateContext, RequestContext } from '../context.js';
import type { CompiledOperations } from './compiled-operations.js';
import type { OperationExecutor, OperationResult } from './executor.js';

/**
 * Runs operations in this process: the table's queries as compiled code with the same rules
 * (compiled-operations.ts), anything else through the same Apollo Server as `/graphql`: same
 * schema, validation rules, limits, plugins and context, without HTTP.
 */
export function inProcessExecutor(
  apollo: ApolloServer<RequestContext>,
  compiled: CompiledOperations,
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
          const context = createContext(caller, requestId);
          const direct = compiled(operation, context, variables);
          if (direct !== undefined) return direct;
          const response = await apollo.executeOperation(
            { query: operation.text, operationName: operation.name, variables },
            { contextValue: context },
          );
          if (response.body.kind !== 'single') throw new Error('incremental delivery is not used by the REST layer');
          return response.body.singleResult as OperationResult;
        },
      };
    },
  };
}
