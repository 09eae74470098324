import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { type EmbeddedServer, startEmbeddedServer } from '@chat-gateway/embedded-mongodb';
import proxyAddress from 'proxy-addr';

import { type Accounts, createAccounts } from './accounts/index.js';
import { createApp } from './app.js';
import { secretKey, signAccessToken } from './auth/access-token.js';
import { Authenticator } from './auth/authenticator.js';
import { callerOf } from './auth/require-caller.js';
import { type Billing, createBilling } from './billing/index.js';
import { type Clock, systemClock } from './clock.js';
import type { Config } from './config.js';
import type { CreateContext } from './context.js';
import { type Conversations, createConversations } from './conversations/index.js';
import { buildIndexes, connectDatabase, type Database } from './db/database.js';
import { withDatabaseName } from './db/uri.js';
import { createApolloServer } from './graphql/apollo.js';
import { compiledOperationCache, compiledQueryRunner } from './graphql/compiled-queries.js';
import { buildSchema } from './graphql/schema.js';
import { seenDocuments } from './graphql/seen-documents.js';
import { listen, type Scheduler, Shutdown } from './http/lifecycle.js';
import { createHttpServer } from './http/server.js';
import type { Logger } from './logger.js';
import { graphqlLogging } from './observability/graphql-logging.js';
import { createMetrics } from './observability/metrics.js';
import { requestIdOf } from './observability/request-log.js';
import { compiledOperations } from './rest/compiled-operations.js';
import { prepareRoutes, restLayerDocuments } from './rest/executor.js';
import { openApiDocument } from './rest/openapi.js';
import type { RestRoute } from './rest/route.js';
import { legacyRoutes } from './rest/routes.js';
import { createRateLimits } from './security/rate-limit.js';
import { TrustedDocuments } from './security/trusted-documents.js';
import { DEMO_USER_ID, demoData } from './seed/demo-data.js';
import { loadSeed, readSeedFile } from './seed/seed-file.js';
import { createSubscriptions, type Subscriptions } from './subscriptions/index.js';
import { startSubscriptionServer } from './subscriptions/websocket-server.js';
import { packageVersion } from './version.js';

const EMBEDDED_DATABASE_NAME = 'chat-gateway';

export interface ServiceOptions {
  /** The legacy REST endpoints; `legacyRoutes` unless given. */
  restRoutes?: RestRoute[];
  /** The time purchases are settled and credentials expire by; the system's unless a test moves it by hand. */
  clock?: Clock;
  /** Times the shutdown delay; the system's timers unless a test moves time by hand. */
  scheduler?: Scheduler;
}

export interface RunningService {
  /** Base URL reachable from this machine, e.g. http://127.0.0.1:4000 */
  url: string;
  database: Database;
  domains: Domains;
  /** The embedded engine's address (a Unix socket), when no MONGODB_URI was given. */
  embeddedUri: string | undefined;
  /** A token for the demo user, only while the demo data is loaded (embedded engine, no SEED_FILE). */
  demoToken: string | undefined;
  /** Whether subscriptions are served (at `ws://…/graphql`), and if not, why. */
  subscriptions: Subscriptions['availability'];
  /**
   * Stops as CONTRACT §8 says: `/readyz` answers 503 at once while requests are still served for
   * SHUTDOWN_DELAY_MS, then the port closes, in-flight requests finish (bounded) while WebSockets
   * are closed with 1001, the change streams close, then the database.
   */
  stop(): Promise<void>;
}

/** What each domain folder's factory made, bound to the database. */
export interface Domains {
  accounts: Accounts;
  conversations: Conversations;
  billing: Billing;
}

/**
 * The embedded engine for this process alone: on a Unix socket (0600) in a fresh directory only
 * this user can enter (0700), never on a TCP port where anyone on the machine could rewrite
 * balances. Closing it removes the directory.
 */
async function startPrivateEngine(): Promise<EmbeddedServer> {
  const directory = await mkdtemp(join(tmpdir(), 'chat-gateway-'));
  const server = await startEmbeddedServer({ socketPath: join(directory, 'mongodb.sock') });
  return {
    uri: server.uri,
    async close() {
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

/** The composition root: configuration → database → domains → GraphQL → HTTP. */
export async function startService(config: Config, logger: Logger, options: ServiceOptions = {}): Promise<RunningService> {
  // Trusted documents first: a bad PERSISTED_DOCUMENTS file stops the start before anything runs.
  const restRoutes = options.restRoutes ?? legacyRoutes;
  const trustedDocuments = await TrustedDocuments.load(config.persistedDocuments, restLayerDocuments(restRoutes));

  // Database: the real one, or the embedded engine in this process.
  const embedded = config.mongodbUri === undefined ? await startPrivateEngine() : undefined;
  let database: Database;
  try {
    database = await connectDatabase(config.mongodbUri ?? withDatabaseName(embedded!.uri, EMBEDDED_DATABASE_NAME), logger);
  } catch (error) {
    await embedded?.close();
    throw error;
  }
  try {
    return await serve(config, logger, { ...options, restRoutes, trustedDocuments }, database, embedded);
  } catch (error) {
    // Nothing listens: what was opened is closed, so a refused start leaves nothing behind.
    await database.close();
    await embedded?.close();
    throw error;
  }
}

async function serve(
  config: Config,
  logger: Logger,
  options: ServiceOptions & { restRoutes: RestRoute[]; trustedDocuments: TrustedDocuments },
  database: Database,
  embedded: EmbeddedServer | undefined,
): Promise<RunningService> {
  // Domains: each gives its stores, a service per caller and its resolvers.
  const { connection } = database;
  const clock = options.clock ?? systemClock;
  const accounts = createAccounts(connection);
  const conversations = createConversations(connection, logger);
  const billing = createBilling({
    connection,
    accounts: accounts.store,
    sso: config.sso,
    settlement: config.settlement,
    logger,
    clock,
  });
  const domains: Domains = { accounts, conversations, billing };
  await buildIndexes(connection);
  const moved = await accounts.store.foldLegacyBalances();
  if (moved > 0) logger.info({ users: moved }, 'balances moved from ten-thousandths of a point to micro-points');

  const loadDemoData = embedded !== undefined && config.seedFile === undefined;
  if (config.seedFile !== undefined) {
    const loaded = await loadSeed(domains, await readSeedFile(config.seedFile), {
      source: config.seedFile,
      onProgress: (progress) => logger.info({ seedFile: config.seedFile, ...progress }, 'seeding'),
    });
    logger.info({ seedFile: config.seedFile, ...loaded }, 'seed file loaded');
  } else if (loadDemoData) {
    await loadSeed(domains, demoData);
  }

  const tokenKey = secretKey(config.jwtSecret ?? randomBytes(32).toString('base64url'));
  // The demo user exists only in the demo data (CONTRACT §8): a seed file has users of its own.
  const demoToken = loadDemoData ? await signAccessToken(tokenKey, DEMO_USER_ID) : undefined;
  const authenticator = new Authenticator(tokenKey, accounts.store, clock);
  // Live updates: a change feed per collection, when the database has change streams.
  const subscriptions = await createSubscriptions({
    connection,
    accounts: accounts.store,
    models: { users: accounts.models.users, conversations: conversations.models.conversations },
    logger,
  });
  const createContext: CreateContext = (caller, requestId) => ({
    caller,
    requestId,
    conversations: conversations.forCaller(caller),
    billing: billing.forCaller(caller),
    subscriptions: subscriptions.forCaller(caller),
  });

  // GraphQL: one schema and one Apollo Server, for /graphql, the REST layer and subscriptions alike.
  const schema = buildSchema([conversations.resolvers, billing.resolvers, subscriptions.resolvers]);
  const { restRoutes, trustedDocuments } = options;
  const preparedRoutes = prepareRoutes(restRoutes, schema);
  const httpServer = createHttpServer();
  const metrics = createMetrics({
    token: config.metricsToken,
    production: config.production,
    knownOperationNames: [...preparedRoutes.map((route) => route.prepared.name), ...trustedDocuments.operationNames],
    database,
    domainMetrics: [...(billing.official?.metrics ?? []), ...subscriptions.metrics.all],
  });
  const shutdown = new Shutdown(config.shutdownDelayMs, options.scheduler);
  const graphqlLog = graphqlLogging(logger);
  // Queries known beforehand (the REST table's) or seen before (on /graphql) run as compiled code outside Apollo's pipeline.
  const runCompiled = compiledQueryRunner(schema, {
    production: config.production,
    observeExecution: metrics.observeExecution,
    recordOperation: metrics.recordOperation,
    logUnexpected: graphqlLog.logUnexpected,
  });
  const compiledFor = compiledOperationCache(schema);
  const seenQueries = seenDocuments(compiledFor, runCompiled, (request, response) =>
    createContext(callerOf(response), requestIdOf(request)),
  );
  const apollo = createApolloServer(schema, {
    production: config.production,
    httpServer,
    plugins: [metrics.graphqlPlugin, graphqlLog.plugin, seenQueries.plugin],
    observeExecution: metrics.observeExecution,
    compiledFor,
  });
  await apollo.start();
  const restQueries = compiledOperations(schema, preparedRoutes, runCompiled);

  // HTTP: the app on the server Apollo Server drains when it stops.
  const rateLimits = await createRateLimits({
    requestsPerSecond: config.rateLimit,
    sharedIn: config.rateLimitStore === 'mongo' ? connection.db : undefined,
  });
  const app = createApp({
    apollo,
    createContext,
    authenticator,
    rateLimits,
    trustedDocuments,
    restRoutes: preparedRoutes,
    restQueries,
    seenQueries: seenQueries.handler,
    openApi: JSON.stringify(openApiDocument(restRoutes, packageVersion, config.restBasePath)),
    database,
    readinessDetails: subscriptions.metrics.counts,
    shutdown,
    metrics,
    graphqlLog,
    logger,
    trustProxy: config.trustProxy,
    corsOrigins: config.corsOrigins,
    restBasePath: config.restBasePath,
    // The playground offers the printed demo token, except in production.
    playground: config.playground ? { demoToken: config.production ? undefined : demoToken } : undefined,
  });
  httpServer.on('request', app);
  // Subscriptions: WebSockets upgraded from the same server, on /graphql too.
  const subscriptionServer = startSubscriptionServer({
    httpServer,
    schema,
    authenticator,
    createContext,
    rateLimits,
    documentOf: (reference) => trustedDocuments.documentFor(reference),
    caps: config.subscriptionCaps,
    clientAddress: (request) => proxyAddress(request, app.get('trust proxy fn')),
    corsOrigins: config.corsOrigins,
    production: config.production,
    clock,
    metrics: subscriptions.metrics,
    logger,
  });
  await listen(httpServer, config.port, config.host);
  const { port } = httpServer.address() as AddressInfo;
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  const settlementSweep = billing.official?.startSweep(config.settlement.intervalMs);

  return {
    url: `http://${host}:${port}`,
    database,
    domains,
    embeddedUri: embedded?.uri,
    demoToken,
    subscriptions: subscriptions.availability,
    async stop() {
      await shutdown.begin();
      // Sockets are told to go away (1001) while the HTTP server stops accepting and drains (see
      // createApolloServer); then GraphQL stops, and the change streams close before the database.
      await Promise.all([subscriptionServer.close(), apollo.stop()]);
      await subscriptions.close();
      metrics.stop();
      // Settlements write to the database: they finish (or are stopped) before it closes.
      await settlementSweep?.stop();
      await database.close();
      await embedded?.close();
    },
  };
}
