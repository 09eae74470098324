import type { ApolloServerPlugin, BaseContext } from '@apollo/server';
import type { RequestHandler } from 'express';
import { collectDefaultMetrics, Registry, type Metric } from 'prom-client';
import type { Database } from '../db/database.js';
import { databaseMetrics } from './database-metrics.js';
import type { ExecutionObserver } from '../graphql/compiled-execution.js';
import { graphqlExecutionMetrics, graphqlMetrics } from './graphql-metrics.js';
import { httpMetrics } from './http-metrics.js';
import { metricsEndpoint } from './metrics-endpoint.js';

export interface GatewayMetrics {
  /** Counts and times every HTTP request; mount before the routes. */
  recordRequests: RequestHandler;
  /** Counts and times every GraphQL operation, from `/graphql` and the REST layer alike. */
  graphqlPlugin: ApolloServerPlugin<BaseContext>;
  /** Counts operations by the executor that ran them. */
  observeExecution: ExecutionObserver;
  /** `GET /metrics` in Prometheus text format. */
  endpoint: RequestHandler;
  /** Stops listening to the database driver. */
  stop(): void;
}

/**
 * One registry per gateway, not prom-client's global one, so several gateways can share a process.
 * `domainMetrics` are those a domain defines for itself (the purchases of the official deployment).
 * Without a database (the sidecar), no database metrics.
 */
export function createMetrics(
  token: string | undefined,
  database?: Pick<Database, 'connection' | 'ping'>,
  domainMetrics: readonly Metric[] = [],
): GatewayMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  for (const metric of domainMetrics) registry.registerMetric(metric);
  return {
    recordRequests: httpMetrics(registry),
    graphqlPlugin: graphqlMetrics(registry),
    observeExecution: graphqlExecutionMetrics(registry),
    endpoint: metricsEndpoint(registry, token),
    stop: database === undefined ? () => undefined : databaseMetrics(registry, database, database.connection.getClient()),
  };
}
