import type { GraphQLError, OperationDefinitionNode } from 'graphql';

import { codeOf, INTERNAL_CODE } from '../errors.js';
import type { Logger } from '../logger.js';
import { type GraphQLMetrics, type OperationLabels, UNRESOLVED_OPERATION } from '../observability/graphql-metrics.js';
import type { Door, ExecutorKind } from '../observability/labels.js';
import { boundedOperationName } from '../observability/request-labels.js';
import { NO_TRACING, type OperationTracer } from '../observability/tracing.js';

/**
 * One operation as it goes through the pipeline: started by its door, told which operation it
 * resolved to, which executor ran it and how it ended. Every door reports the same events, so
 * metrics and logs are alike for all of them.
 */
export interface Observation {
  /** The door the operation came in through. */
  readonly door: Door;
  /** The operation's name as logs show it (bounded); undefined until resolved. */
  readonly operationName: string | undefined;
  resolved(operation: OperationDefinitionNode): void;
  executed(executor: ExecutorKind): void;
  /** Runs `work` (its execution) inside the operation's span, so that what it does are spans of the operation. */
  within<T>(work: () => T): T;
  /** The operation was answered with these errors (none: a success). Ends the observation; later calls are ignored. */
  finished(errors: readonly GraphQLError[] | undefined): void;
}

/**
 * The observation of a batched request's shared context (Apollo Server gives every operation of a
 * batch the context the request made): a batch is no operation, so this observes nothing, and
 * each of its operations is observed with a context of its own (`RequestContext.forOperation`).
 */
export const BATCH_OF_OPERATIONS: Observation = {
  door: 'graphql',
  operationName: undefined,
  resolved: () => {},
  executed: () => {},
  within: (work) => work(),
  finished: () => {},
};

/**
 * The observe stage: the one place operations are counted, timed, traced (a span each, in the
 * context the door started it in) and their unexpected errors logged (with their request and
 * operation, once), whatever the door.
 */
export class OperationObserver {
  constructor(
    private readonly metrics: GraphQLMetrics,
    private readonly logger: Logger,
    private readonly tracer: OperationTracer = NO_TRACING.operations,
  ) {}

  /** Starts observing an operation, its span in the context active now, or (`ownTrace`: a subscription's event) a trace of its own. */
  start(door: Door, requestId: string, ownTrace = false): Observation {
    const { metrics, logger } = this;
    const startedAt = process.hrtime.bigint();
    const span = this.tracer.start(door, ownTrace);
    let operation: OperationLabels = UNRESOLVED_OPERATION;
    let operationName: string | undefined;
    let ended = false;
    return {
      door,
      get operationName() {
        return operationName;
      },
      resolved(definition) {
        operationName = boundedOperationName(definition.name?.value ?? 'anonymous');
        operation = { name: operationName, type: definition.operation };
        span.named(definition.operation, definition.name === undefined ? undefined : operationName);
      },
      executed: (executor) => metrics.executed(executor),
      within: (work) => span.within(work),
      finished(errors = []) {
        if (ended) return;
        ended = true;
        const codes = errors.map(codeOf);
        metrics.operationFinished(operation, codes, Number(process.hrtime.bigint() - startedAt) / 1e9);
        span.end(codes);
        errors.forEach((error, index) => {
          if (codes[index] !== INTERNAL_CODE) return;
          logger.error(
            { err: error.originalError ?? error, requestId, door, operation: operationName },
            'unexpected error in a GraphQL operation',
          );
        });
      },
    };
  }
}
