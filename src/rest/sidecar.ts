import express, { type Express } from 'express';
import { buildSchema } from '../graphql/schema.js';
import type { TrustProxy } from '../config.js';
import type { Logger } from '../logger.js';
import { internalError, notFound } from '../http/fallback.js';
import { assignRequestId } from '../http/request-id.js';
import { securityHeaders } from '../security/http-headers.js';
import { prepareRoutes } from './executor.js';
import { createLegacyRouter } from './legacy-router.js';
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
}

/** The legacy REST layer alone, in front of a remote GraphQL endpoint: same table, same bodies. */
export function createSidecarApp(options: SidecarOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', options.trustProxy);
  app.use(securityHeaders, assignRequestId);
  app.get('/healthz', (_request, response) => {
    response.json({ status: 'ok' });
  });
  const routes = prepareRoutes(legacyRoutes, buildSchema());
  app.use(createLegacyRouter(routes, remoteExecutor(options.upstream, options.timeoutMs)));
  app.use(notFound);
  app.use(internalError(options.logger));
  return app;
}
