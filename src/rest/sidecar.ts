import express, { type Express } from 'express';
import type { TrustProxy } from '../config.js';
import { buildSchema } from '../graphql/schema.js';
import { legacyFailures, noSuchPath } from '../http/failures.js';
import type { Logger } from '../logger.js';
import { requestLogging } from '../observability/request-log.js';
import { crossOrigin } from '../security/cross-origin.js';
import { securityHeaders } from '../security/http-headers.js';
import { prepareRoutes } from './executor.js';
import { legacyEndpoints } from './legacy-router.js';
import { remoteExecutor } from './remote-executor.js';
import { legacyRoutes } from './routes.js';

export interface SidecarOptions {
  /** The GraphQL endpoint of a gateway, e.g. http://10.0.0.5:4000/graphql */
  upstream: URL;
  /** How long to wait for the upstream before answering 503. */
  timeoutMs: number;
  logger: Logger;
  /** Express's `trust proxy`: which proxies in front may name the client's address. */
  trustProxy: TrustProxy;
  /** Browser origins allowed to call the endpoints (CORS); empty, none. */
  corsOrigins: readonly string[];
  /** Where the endpoints are served besides the root, e.g. `/api`. */
  basePath: string | undefined;
}

/** The legacy REST layer alone, in front of a remote GraphQL endpoint: same table, same bodies. */
export function createSidecarApp(options: SidecarOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', options.trustProxy);
  // Request ids (forwarded upstream, so one id runs through both logs); the gateway logs the requests.
  app.use(securityHeaders, requestLogging(options.logger, { log: false }));
  app.get('/healthz', (_request, response) => {
    response.json({ status: 'ok' });
  });
  app.use(crossOrigin(options.corsOrigins));
  // The gateway limits callers itself, and its refusals are answered like local ones.
  const routes = prepareRoutes(legacyRoutes, buildSchema());
  app.use(
    ...legacyEndpoints(routes, remoteExecutor(options.upstream, options.timeoutMs), {
      afterAuthentication: [],
      basePath: options.basePath,
    }),
  );
  app.use(noSuchPath, legacyFailures('error'));
  return app;
}
