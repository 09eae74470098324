import { expressMiddleware } from '@as-integrations/express5';
import express, { type Express } from 'express';
import { Authenticator } from './auth/authenticator.js';
import { callerOf, requireCaller } from './auth/require-caller.js';
import { createRequestContext, type AppServices } from './context.js';
import type { TrustProxy } from './config.js';
import type { Database } from './db/database.js';
import { createApolloServer } from './graphql/apollo.js';
import { buildSchema } from './graphql/schema.js';
import { internalError, notFound } from './http/fallback.js';
import { healthRoutes } from './http/health.js';
import { assignRequestId, requestIdOf } from './http/request-id.js';
import type { Logger } from './logger.js';
import { graphqlLogging } from './observability/graphql-logging.js';
import { createMetrics } from './observability/metrics.js';
import { logRequests } from './observability/request-log.js';
import { playgroundRouter, type PlaygroundOptions } from './playground/playground.js';
import { prepareRoutes } from './rest/executor.js';
import { inProcessExecutor } from './rest/in-process-executor.js';
import { createLegacyRouter } from './rest/legacy-router.js';
import { openApiDocument } from './rest/openapi.js';
import { legacyRoutes } from './rest/routes.js';
import { credentialedGetIsPreflighted } from './security/credentialed-get.js';
import { graphqlRequestErrors } from './security/graphql-request-errors.js';
import { securityHeaders } from './security/http-headers.js';
import { createRateLimits } from './security/rate-limit.js';
import { packageVersion } from './version.js';

export interface GatewayOptions {
  /** For readiness and database metrics. */
  database: Database;
  services: AppServices;
  /** Key that signs and verifies access tokens. */
  tokenKey: Uint8Array;
  production: boolean;
  /** Requests per second per caller (ten times that per address before authentication); 0 turns limiting off. */
  rateLimit: number;
  /** Receives one line per request. */
  logger: Logger;
  trustProxy: TrustProxy;
  /** When set, `/metrics` answers only `Authorization: Bearer <metricsToken>`. */
  metricsToken: string | undefined;
  /** GraphiQL at `GET /graphql` for browsers; absent, no playground. */
  playground: PlaygroundOptions | undefined;
}

export interface Gateway {
  app: Express;
  /** Stops the GraphQL server; the caller closes the HTTP server and the database. */
  stop(): Promise<void>;
}

const JSON_BODY_LIMIT = '100kb';
const GRAPHQL_UNAUTHORIZED = {
  errors: [{ message: 'missing or invalid credentials', extensions: { code: 'UNAUTHENTICATED' } }],
};

export async function createGateway(options: GatewayOptions): Promise<Gateway> {
  const { database, services } = options;
  const rateLimits = createRateLimits(options.rateLimit, legacyRoutes);
  const authenticator = new Authenticator(options.tokenKey, services.stores.accounts, rateLimits.admitCaller);
  const schema = buildSchema();
  const metrics = createMetrics(database, options.metricsToken);
  const graphqlLog = graphqlLogging(options.logger);
  const apollo = createApolloServer(schema, {
    production: options.production,
    plugins: [metrics.graphqlPlugin, graphqlLog.plugin],
  });
  await apollo.start();
  const restRoutes = prepareRoutes(legacyRoutes, schema);

  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', options.trustProxy);
  app.use(securityHeaders);
  app.use(assignRequestId, metrics.recordRequests);

  app.use(healthRoutes(database));
  app.get('/metrics', metrics.endpoint);
  // Probes and scrapes above are counted but not logged: they would drown the log.
  app.use(logRequests(options.logger));
  app.use(rateLimits.byAddress);

  if (options.playground) app.use(playgroundRouter(options.playground));
  app.use(
    '/graphql',
    requireCaller(authenticator, GRAPHQL_UNAUTHORIZED),
    credentialedGetIsPreflighted,
    express.json({ limit: JSON_BODY_LIMIT }),
    expressMiddleware(apollo, {
      context: async ({ res }) => graphqlLog.track(res, createRequestContext(services, callerOf(res), requestIdOf(res))),
    }),
    graphqlRequestErrors,
  );

  const openApi = JSON.stringify(openApiDocument(legacyRoutes, packageVersion));
  app.get('/openapi.json', (_request, response) => {
    response.type('application/json').send(openApi);
  });
  app.use(createLegacyRouter(restRoutes, inProcessExecutor(apollo, authenticator, services)));

  app.use(notFound);
  app.use(internalError(options.logger));

  return {
    app,
    async stop() {
      metrics.stop();
      await apollo.stop();
    },
  };
}
