import type { RequestHandler } from 'express';
import { Counter, Histogram, type Registry } from 'prom-client';

import { childrenPerLabelSet } from './metric-children.js';
import { whenRequestEnds } from './request-end.js';

const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Counts and times every HTTP request by method, route pattern and status. */
export function httpMetrics(registry: Registry): RequestHandler {
  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status',
    labelNames,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from receiving an HTTP request to finishing its answer, by method, route pattern and status',
    labelNames,
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  // Label values are bounded (methods Node accepts, declared routes, statuses).
  const childrenOf = childrenPerLabelSet((method: string, route: string, status: string) => ({
    requests: requests.labels(method, route, status),
    duration: duration.labels(method, route, status),
  }));
  return (request, response, next) => {
    whenRequestEnds(request, response, ({ route, status, durationSeconds }) => {
      const child = childrenOf(request.method, route, String(status));
      child.requests.inc();
      child.duration.observe(durationSeconds);
    });
    next();
  };
}
