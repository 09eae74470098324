import type { AddressInfo } from 'node:net';

import type { Express } from 'express';

import type { Clock } from '../clock.js';
import type { SidecarConfig } from '../config.js';
import { buildSchema } from '../graphql/schema.js';
import { buildHttpApp } from '../http/app.js';
import { drainable, listen, Shutdown } from '../http/lifecycle.js';
import { createHttpServer, expressApp } from '../http/server.js';
import type { Logger } from '../logger.js';
import { createMetrics, type GatewayMetrics } from '../observability/metrics.js';
import { startTracing } from '../observability/start-tracing.js';
import type { Tracing } from '../observability/tracing.js';
import { packageVersion } from '../version.js';
import { legacyFailures } from './legacy-answer.js';
import { legacyEndpoints } from './legacy-router.js';
import { openApiDocument } from './openapi.js';
import { confirmCallerOperation, prepareRoutes } from './prepared-routes.js';
import { probeUpstream, remoteRunner } from './remote-runner.js';
import { legacyRoutes } from './routes.js';

export interface SidecarOptions {
  config: SidecarConfig;
  /** The GraphQL endpoint of a gateway, e.g. http://10.0.0.5:4000/graphql */
  upstream: URL;
  /** How long to wait for the upstream before answering 503. */
  timeoutMs: number;
  logger: Logger;
  /** Times the shutdown delay; the system's unless a test moves time by hand. */
  clock?: Clock;
}

export interface RunningSidecar {
  /** Base URL reachable from this machine. */
  url: string;
  /** As the gateway's (`http/lifecycle.ts`): not ready at once, serving until the delay is over, then drained. */
  stop(): Promise<void>;
}

/**
 * The legacy REST layer alone, in front of a remote GraphQL endpoint: same table, same bodies.
 * The upstream must answer GraphQL before anything listens.
 */
export async function startSidecar(options: SidecarOptions): Promise<RunningSidecar> {
  const { config, upstream, timeoutMs } = options;
  await probeUpstream(upstream, timeoutMs);
  const shutdown = new Shutdown(config.shutdownDelayMs, options.clock);
  const metrics = createMetrics({ token: config.metricsToken, production: config.production });
  // Each request a span, whose call upstream carries its `traceparent`: the gateway's spans join the same trace.
  const tracing = await startTracing(config.tracing, { name: 'chat-gateway-sidecar', version: packageVersion }, options.logger);
  const app = sidecarApp(options, shutdown, metrics, tracing);
  const server = createHttpServer(app).on('request', tracing.serveRequests(app));
  const { drain } = drainable(server);
  await listen(server, config.port, config.host);
  const { port } = server.address() as AddressInfo;
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  return {
    url: `http://${host}:${port}`,
    async stop() {
      await shutdown.begin();
      await drain();
      metrics.stop();
      await tracing.shutdown();
    },
  };
}

/** The sidecar's parts of the one HTTP app (`http/app.ts`): the upstream for readiness, and the legacy endpoints run against it. */
function sidecarApp(options: SidecarOptions, shutdown: Shutdown, metrics: GatewayMetrics, tracing: Tracing): Express {
  const { upstream, timeoutMs } = options;
  const { config } = options;
  const schema = buildSchema();
  const runner = remoteRunner(upstream, timeoutMs, config.responseMaxBytes, confirmCallerOperation(schema));
  return buildHttpApp(expressApp(config.trustProxy), {
    requestLog: { logger: options.logger, activeSpanIds: tracing.activeSpanIds },
    metrics,
    health: { dependency: { ping: (ms) => probeUpstream(upstream, ms), unavailable: 'upstream unavailable' }, shutdown },
    corsOrigins: config.corsOrigins,
    // The gateway limits callers itself, and its refusals are answered like local ones.
    addressLimit: undefined,
    graphql: undefined,
    rest: {
      endpoints: legacyEndpoints(prepareRoutes(legacyRoutes, schema), runner, { afterAuthentication: [], basePath: config.restBasePath }),
      openApi: JSON.stringify(openApiDocument(legacyRoutes, packageVersion, config.restBasePath)),
      otherwise: legacyFailures('error'),
    },
  });
}
