import type { RequestHandler } from 'express';
import { collectDefaultMetrics, type Metric, Registry } from 'prom-client';

import type { Database } from '../db/database.js';
import { databaseMetrics } from './database-metrics.js';
import { type GraphQLMetrics, graphqlMetrics } from './graphql-metrics.js';
import { httpMetrics } from './http-metrics.js';
import { metricsEndpoint } from './metrics-endpoint.js';

export interface GatewayMetrics {
  /** Counts and times every HTTP request; mount before the routes. */
  recordRequests: RequestHandler;
  /** Counts and times every GraphQL operation, whatever its door (fed by the operation pipeline's observer). */
  graphql: GraphQLMetrics;
  /** `GET /metrics` in Prometheus text format; absent in production without a token, where it is not served. */
  endpoint: RequestHandler | undefined;
  /** Stops observing the database's commands. */
  stop(): void;
}

export interface MetricsOptions {
  /** Bearer token a scrape must present; none: scrapes need no credentials (outside production only). */
  token: string | undefined;
  production: boolean;
  /** Operation names known at start, which always have their own label. */
  knownOperationNames?: Iterable<string>;
  /** Without one (the sidecar), no database metrics. */
  database?: Pick<Database, 'commands' | 'ping'>;
  /** Those a domain defines for itself (the purchases of the official deployment). */
  domainMetrics?: readonly Metric[];
}

/** One registry per gateway, not prom-client's global one, so several gateways can share a process. */
export function createMetrics(options: MetricsOptions): GatewayMetrics {
  const { database } = options;
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  for (const metric of options.domainMetrics ?? []) registry.registerMetric(metric);
  return {
    recordRequests: httpMetrics(registry),
    graphql: graphqlMetrics(registry, options.knownOperationNames ?? []),
    // Open metrics tell anyone the traffic, the operations and the process's state: production shows them only to a token.
    endpoint: options.production && options.token === undefined ? undefined : metricsEndpoint(registry, options.token),
    stop: database === undefined ? () => undefined : databaseMetrics(registry, database),
  };
}
