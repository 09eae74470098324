import type { GraphQLError } from 'graphql';

import type { Observation } from './observer.js';

/** Who runs an operation, as the pipeline needs to know them: by user id. */
export interface OperationCaller {
  readonly userId: number;
}

/** What the execute stage reads of an answer's response budget: the refusal, once the answer went past it. */
export interface AnswerBudget {
  readonly refusal: GraphQLError | undefined;
}

/**
 * What the pipeline needs of the context an operation runs with, whatever else the resolvers find
 * in it (`context.ts` adds each domain's service): the caller, the request's id, the operation's
 * observation (which names its door) and its response budget. The pipeline and the execute stage
 * depend on this alone, so that `src/operations/` imports no domain.
 */
export interface OperationContext {
  readonly caller: OperationCaller;
  /** The HTTP request's id, as in its log line and `X-Request-Id`; a subscription's own id over WebSocket. */
  readonly requestId: string;
  readonly observation: Observation;
  readonly budget: AnswerBudget;
}

/** Builds the context of one request, or of one subscription event. */
export type CreateOperationContext = (caller: OperationCaller, requestId: string, observation: Observation) => OperationContext;
