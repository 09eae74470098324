import type { ApolloServerPlugin, BaseContext, GraphQLResponse } from '@apollo/server';
import type { GraphQLFormattedError } from 'graphql';
import { Counter, Histogram, type Registry } from 'prom-client';

import { codeOf } from '../errors.js';
import type { ExecutionObserver } from '../graphql/compiled-execution.js';
import { OperationNameLabels } from './request-labels.js';

const DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Requests that never reached a valid operation (unparsable, invalid, ambiguous). */
const UNRESOLVED = '(unresolved)';

/** Records one GraphQL operation that ran outside Apollo Server (the REST layer's compiled queries). */
export type OperationRecorder = (
  operation: { name: string; type: string },
  errors: readonly GraphQLFormattedError[],
  startedAt: bigint,
) => void;

/**
 * Counts and times GraphQL operations by name and type, and errors by code: the plugin sees every
 * operation Apollo Server runs (`/graphql`, the REST layer's mutations), `record` the REST layer's
 * queries it runs itself, so the figures cover both surfaces alike.
 * Clients choose operation names: `knownOperationNames` always have their label, others are bounded.
 */
export function graphqlMetrics(
  registry: Registry,
  knownOperationNames: Iterable<string>,
): { plugin: ApolloServerPlugin<BaseContext>; record: OperationRecorder } {
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
  const names = new OperationNameLabels(knownOperationNames);

  /** `name` is a label already (bounded). */
  const count = (name: string, type: string, failures: readonly GraphQLFormattedError[], startedAt: bigint) => {
    for (const failure of failures) errors.inc({ code: codeOf(failure) });
    const labels = { operation_name: name, operation_type: type };
    operations.inc({ ...labels, result: failures.length > 0 ? 'error' : 'success' });
    duration.observe(labels, Number(process.hrtime.bigint() - startedAt) / 1e9);
  };

  return {
    record: (operation, failures, startedAt) => count(names.label(operation.name), operation.type, failures, startedAt),
    plugin: {
      async requestDidStart() {
        const started = process.hrtime.bigint();
        let operationName = UNRESOLVED;
        let operationType = 'unknown';
        return {
          async didResolveOperation(requestContext) {
            operationName = names.label(requestContext.operationName ?? 'anonymous');
            operationType = requestContext.operation?.operation ?? 'unknown';
          },
          async willSendResponse({ response }) {
            count(operationName, operationType, formattedErrorsOf(response), started);
          },
        };
      },
    },
  };
}

/** Counts executed operations by executor, which shows how many queries run as compiled code. */
export function graphqlExecutionMetrics(registry: Registry): ExecutionObserver {
  const executions = new Counter({
    name: 'graphql_executions_total',
    help: 'GraphQL operations executed, by executor: graphql-jit compiled code or graphql-js',
    labelNames: ['executor'] as const,
    registers: [registry],
  });
  return (executor) => executions.inc({ executor });
}

export function formattedErrorsOf(response: GraphQLResponse): readonly GraphQLFormattedError[] {
  const result = response.body.kind === 'single' ? response.body.singleResult : response.body.initialResult;
  return result.errors ?? [];
}
