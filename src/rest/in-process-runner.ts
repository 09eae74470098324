import type { Authenticator, Caller } from '../auth/authenticator.js';
import type { CreateContext } from '../context.js';
import { internal } from '../errors.js';
import type { OperationPipeline } from '../operations/pipeline.js';
import { failureOfOperation } from './operation-failures.js';
import type { CallerSession, OperationRunner } from './operation-runner.js';

/** A session of this process: it checked the credentials itself, and names the caller. */
export type InProcessSession = CallerSession & { readonly caller: Caller };

/**
 * Runs the table's operations in this process, through the same operation pipeline as `/graphql`:
 * the same document cache, limits, executor, observation and context. A failure comes back as the
 * failure a resolver threw or the execution named (or an internal one), by the kinds of
 * `operation-failures.ts`, answered once in the endpoint's shape.
 */
export function inProcessRunner(
  pipeline: OperationPipeline,
  authenticator: Pick<Authenticator, 'authenticate'>,
  createContext: CreateContext,
): OperationRunner<InProcessSession> {
  return {
    async open({ authorization, requestId }) {
      const caller = await authenticator.authenticate(authorization);
      if (caller === null) return null;
      return {
        caller,
        confirmCaller: async () => true,
        async run(operation, variables) {
          const context = createContext(caller, requestId, pipeline.observer.start('rest', requestId));
          const request = { text: operation.text, id: operation.id, operationName: operation.name, variables, known: true };
          const { data, errors } = await pipeline.run(request, context);
          if (errors?.[0] !== undefined) return { failure: failureOfOperation(errors[0]) };
          return data ? { data } : { failure: internal(new Error(`operation ${operation.name} answered no data`)) };
        },
      };
    },
  };
}
