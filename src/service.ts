import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { ApolloServerPlugin } from '@apollo/server';
import { type EmbeddedServer, startEmbeddedServer } from '@chat-gateway/embedded-mongodb';
import proxyAddress from 'proxy-addr';

import { type Accounts, createAccounts } from './accounts/index.js';
import { createApp } from './app.js';
import { secretKey, signAccessToken } from './auth/access-token.js';
import { Authenticator } from './auth/authenticator.js';
import { type Billing, createBilling } from './billing/index.js';
import { type Clock, systemClock } from './clock.js';
import type { Config } from './config.js';
import { type CreateContext, RequestContext } from './context.js';
import { type Conversations, createConversations } from './conversations/index.js';
import { buildIndexes, connectDatabase, type Database } from './db/database.js';
import { withDatabaseName } from './db/uri.js';
import { createApolloServer } from './graphql/apollo.js';
import { buildSchema } from './graphql/schema.js';
import { listen, type Scheduler, Shutdown } from './http/lifecycle.js';
import { createHttpServer } from './http/server.js';
import type { Logger } from './logger.js';
import { createMetrics } from './observability/metrics.js';
import { startTracing, type Tracing } from './observability/tracing.js';
import { OperationPipeline } from './operations/pipeline.js';
import { openApiDocument } from './rest/openapi.js';
import { prepareRoutes, restLayerDocuments } from './rest/prepared-routes.js';
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
  /** Apollo Server plugins of one's own, besides the gateway's (they see every `/graphql` request). */
  apolloPlugins?: ApolloServerPlugin<RequestContext>[];
  /**
   * Starts the in-process engine (no MONGODB_URI) with MongoDB's test commands, so that fault tests
   * can inject failures with `configureFailPoint`; never set by the command line or the environment.
   */
  enableTestCommands?: boolean;
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
async function startPrivateEngine(enableTestCommands: boolean): Promise<EmbeddedServer> {
  const directory = await mkdtemp(join(tmpdir(), 'chat-gateway-'));
  const server = await startEmbeddedServer({ socketPath: join(directory, 'mongodb.sock'), enableTestCommands });
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

  // Traces (the SDK is loaded only with an OTLP endpoint), then the database: the real one, or the embedded engine in this process.
  const tracing = await startTracing(config.tracing, { name: 'chat-gateway', version: packageVersion }, logger);
  let embedded: EmbeddedServer | undefined;
  let database: Database;
  try {
    embedded = config.mongodbUri === undefined ? await startPrivateEngine(options.enableTestCommands ?? false) : undefined;
    database = await connectDatabase(config.mongodbUri ?? withDatabaseName(embedded!.uri, EMBEDDED_DATABASE_NAME), logger);
  } catch (error) {
    await embedded?.close();
    await tracing.shutdown();
    throw error;
  }
  try {
    tracing.traceDatabaseCommands(database.connection.getClient());
    return await serve(config, logger, { ...options, restRoutes, trustedDocuments, tracing }, database, embedded);
  } catch (error) {
    // Nothing listens: what was opened is closed, so a refused start leaves nothing behind.
    await database.close();
    await embedded?.close();
    await tracing.shutdown();
    throw error;
  }
}

type Started = ServiceOptions & { restRoutes: RestRoute[]; trustedDocuments: TrustedDocuments; tracing: Tracing };

/** What the composition root has made so far, handed from one stage to the next. */
interface Parts {
  config: Config;
  logger: Logger;
  options: Started;
  clock: Clock;
  database: Database;
  domains: Domains;
  subscriptions: Subscriptions;
  authenticator: Authenticator;
  demoToken: string | undefined;
}

async function serve(
  config: Config,
  logger: Logger,
  options: Started,
  database: Database,
  embedded: EmbeddedServer | undefined,
): Promise<RunningService> {
  const clock = options.clock ?? systemClock;
  const domains = createDomains(config, logger, database, clock, options.tracing);
  await buildIndexes(database.connection);
  const loadDemoData = await loadData(config, logger, domains, embedded !== undefined);

  const tokenKey = secretKey(config.jwtSecret ?? randomBytes(32).toString('base64url'));
  // The demo user exists only in the demo data (CONTRACT §8): a seed file has users of its own.
  const demoToken = loadDemoData ? await signAccessToken(tokenKey, DEMO_USER_ID) : undefined;
  const authenticator = new Authenticator(tokenKey, domains.accounts.store, clock);
  // Live updates: a change feed per collection, when the database has change streams.
  const subscriptions = await createSubscriptions({
    connection: database.connection,
    accounts: domains.accounts.store,
    models: { users: domains.accounts.models.users, conversations: domains.conversations.models.conversations },
    logger,
  });
  const parts: Parts = { config, logger, options, clock, database, domains, subscriptions, authenticator, demoToken };
  const graphql = await startGraphQL(parts);
  const doors = await openDoors(parts, graphql);
  const settlementSweep = domains.billing.official?.startSweep(config.settlement.intervalMs);

  return {
    url: doors.url,
    database,
    domains,
    embeddedUri: embedded?.uri,
    demoToken,
    subscriptions: subscriptions.availability,
    async stop() {
      await doors.shutdown.begin();
      // Sockets are told to go away (1001) while the HTTP server stops accepting and drains (see
      // createApolloServer); then GraphQL stops, and the change streams close before the database.
      await Promise.all([doors.subscriptionServer.close(), graphql.apollo.stop()]);
      await subscriptions.close();
      graphql.metrics.stop();
      // Settlements write to the database: they finish (or are stopped) before it closes.
      await settlementSweep?.stop();
      await database.close();
      await embedded?.close();
      // Last, so that the spans of everything above are sent.
      await options.tracing.shutdown();
    },
  };
}

/** One schema and one operation pipeline for every door (/graphql, the REST layer, subscriptions), and Apollo Server over it. */
async function startGraphQL({ config, logger, options, database, domains, subscriptions }: Parts) {
  const schema = buildSchema([domains.conversations.resolvers, domains.billing.resolvers, subscriptions.resolvers]);
  const restRoutes = prepareRoutes(options.restRoutes, schema);
  const httpServer = createHttpServer();
  const metrics = createMetrics({
    token: config.metricsToken,
    production: config.production,
    knownOperationNames: [...restRoutes.map((route) => route.prepared.name), ...options.trustedDocuments.operationNames],
    database,
    domainMetrics: [...(domains.billing.official?.metrics ?? []), ...subscriptions.metrics.all],
  });
  const pipeline = new OperationPipeline({
    schema,
    production: config.production,
    metrics: metrics.graphql,
    logger,
    tracer: options.tracing.operations,
  });
  const apollo = createApolloServer(pipeline, { production: config.production, httpServer, plugins: options.apolloPlugins });
  await apollo.start();
  return { restRoutes, httpServer, metrics, pipeline, apollo };
}

/** The HTTP app and the WebSocket server on the server Apollo Server drains when it stops, listening. */
async function openDoors(parts: Parts, { restRoutes, httpServer, metrics, pipeline, apollo }: Awaited<ReturnType<typeof startGraphQL>>) {
  const { config, logger, options, database, subscriptions, authenticator } = parts;
  const createContext = contextFactory(parts.domains, subscriptions);
  const rateLimits = await createRateLimits({
    requestsPerSecond: config.rateLimit,
    sharedIn: config.rateLimitStore === 'mongo' ? database.connection.db : undefined,
  });
  const shutdown = new Shutdown(config.shutdownDelayMs, options.scheduler);
  const app = createApp({
    apollo,
    pipeline,
    createContext,
    authenticator,
    rateLimits,
    restRoutes,
    database,
    shutdown,
    metrics,
    logger,
    activeSpanIds: options.tracing.activeSpanIds,
    trustedDocuments: options.trustedDocuments,
    openApi: JSON.stringify(openApiDocument(options.restRoutes, packageVersion, config.restBasePath)),
    readinessDetails: subscriptions.metrics.counts,
    trustProxy: config.trustProxy,
    corsOrigins: config.corsOrigins,
    restBasePath: config.restBasePath,
    // The playground offers the printed demo token, except in production.
    playground: config.playground ? { demoToken: config.production ? undefined : parts.demoToken } : undefined,
  });
  httpServer.on('request', options.tracing.serveRequests(app));
  // Subscriptions: WebSockets upgraded from the same server, on /graphql too.
  const subscriptionServer = startSubscriptionServer({
    httpServer,
    pipeline,
    authenticator,
    createContext,
    rateLimits,
    logger,
    clock: parts.clock,
    messagesPerSecond: config.rateLimit,
    documentOf: (reference) => options.trustedDocuments.documentFor(reference),
    caps: config.subscriptionCaps,
    clientAddress: (request) => proxyAddress(request, app.get('trust proxy fn')),
    corsOrigins: config.corsOrigins,
    metrics: subscriptions.metrics,
  });
  await listen(httpServer, config.port, config.host);
  const { port } = httpServer.address() as AddressInfo;
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  return { url: `http://${host}:${port}`, shutdown, subscriptionServer };
}

/** Each domain's factory, bound to the database: stores, a service per caller, resolvers. */
function createDomains(config: Config, logger: Logger, { connection }: Database, clock: Clock, tracing: Tracing): Domains {
  const accounts = createAccounts(connection);
  const conversations = createConversations(connection, logger);
  const { sso, settlement } = config;
  const billing = createBilling({ connection, accounts: accounts.store, sso, settlement, logger, clock, tracing: tracing.purchases });
  return { accounts, conversations, billing };
}

/** Loads SEED_FILE, or the demo data on the embedded engine without one; true when the demo data was loaded. */
async function loadData(config: Config, logger: Logger, domains: Domains, onEmbeddedEngine: boolean): Promise<boolean> {
  if (config.seedFile !== undefined) {
    const loaded = await loadSeed(domains, await readSeedFile(config.seedFile), {
      source: config.seedFile,
      onProgress: (progress) => logger.info({ seedFile: config.seedFile, ...progress }, 'seeding'),
    });
    logger.info({ seedFile: config.seedFile, ...loaded }, 'seed file loaded');
    return false;
  }
  if (!onEmbeddedEngine) return false;
  await loadSeed(domains, demoData);
  return true;
}

/** The context of each request: the caller's services, each made when a resolver first asks for it. */
function contextFactory(domains: Domains, subscriptions: Subscriptions): CreateContext {
  const services = {
    conversations: domains.conversations.forCaller,
    billing: domains.billing.forCaller,
    subscriptions: subscriptions.forCaller,
  };
  return (caller, requestId, observation) => new RequestContext(caller, requestId, observation, services);
}
