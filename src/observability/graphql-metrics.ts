import { Counter, Histogram, type Registry } from 'prom-client';

import type { ExecutorKind } from './labels.js';
import { childrenPerLabelSet } from './metric-children.js';
import { OperationNameLabels } from './request-labels.js';

const DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The name of requests that never reached a valid operation (unparsable, invalid, ambiguous). */
export const UNRESOLVED_OPERATION: OperationLabels = { name: '(unresolved)', type: 'unknown' };

/** What one operation was, as its metrics label it; `name` comes from the client, and is bounded here. */
export interface OperationLabels {
  name: string;
  type: string;
}

/** The GraphQL operation metrics, fed by the operation pipeline's observer for every door alike. */
export interface GraphQLMetrics {
  /** One operation answered: its errors by code, and how long it took from its start. */
  operationFinished(operation: OperationLabels, errorCodes: readonly string[], seconds: number): void;
  executed(executor: ExecutorKind): void;
}

/**
 * Counts and times GraphQL operations by name and type, errors by code, and executions by the
 * executor that ran them. Clients choose operation names: `knownOperationNames` always have
 * their label, others are bounded.
 */
export function graphqlMetrics(registry: Registry, knownOperationNames: Iterable<string>): GraphQLMetrics {
  const operations = new Counter({
    name: 'graphql_operations_total',
    help: 'GraphQL operations run, by operation name and type, and whether the response carried errors',
    labelNames: ['operation_name', 'operation_type', 'result'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'graphql_operation_duration_seconds',
    help: 'Time to parse, validate and execute a GraphQL operation, by operation name and type',
    labelNames: ['operation_name', 'operation_type'] as const,
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  const errors = new Counter({
    name: 'graphql_errors_total',
    help: 'Errors in GraphQL responses, by extensions.code',
    labelNames: ['code'] as const,
    registers: [registry],
  });
  const executions = new Counter({
    name: 'graphql_executions_total',
    help: 'GraphQL operations executed, by executor: graphql-jit compiled code or graphql-js',
    labelNames: ['executor'] as const,
    registers: [registry],
  });
  const names = new OperationNameLabels([UNRESOLVED_OPERATION.name, ...knownOperationNames]);
  // Names are bounded above, so each operation's children can be kept.
  const childrenOf = childrenPerLabelSet((name: string, type: string) => ({
    succeeded: operations.labels(name, type, 'success'),
    failed: operations.labels(name, type, 'error'),
    duration: duration.labels(name, type),
  }));
  const executedBy = { compiled: executions.labels('compiled'), 'graphql-js': executions.labels('graphql-js') };
  return {
    operationFinished(operation, errorCodes, seconds) {
      for (const code of errorCodes) errors.inc({ code });
      const child = childrenOf(names.label(operation.name), operation.type);
      (errorCodes.length > 0 ? child.failed : child.succeeded).inc();
      child.duration.observe(seconds);
    },
    executed: (executor) => executedBy[executor].inc(),
  };
}
