import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { ApolloServerPlugin } from '@apollo/server';
import { type EmbeddedServer, startEmbeddedServer } from '@chat-gateway/embedded-mongodb';
import type { GraphQLSchema } from 'graphql';
import proxyAddress from 'proxy-addr';

import { type Accounts, createAccounts } from './accounts/index.js';
import { graphqlDoors, restDoor } from './app.js';
import { secretKey, signAccessToken } from './auth/access-token.js';
import { Authenticator } from './auth/authenticator.js';
import { keptSecret } from './auth/kept-secret.js';
import { type ProviderKeyTimings, ProviderTokens } from './auth/provider-tokens.js';
import { type Billing, createBilling } from './billing/index.js';
import { type Clock, systemClock } from './clock.js';
import type { Config } from './config.js';
import { type CreateContext, RequestContext } from './context.js';
import { type Conversations, createConversations } from './conversations/index.js';
import { buildIndexes, connectDatabase, type Database } from './db/database.js';
import { withDatabaseName } from './db/uri.js';
import { createApolloServer } from './graphql/apollo.js';
import { buildSchema } from './graphql/schema.js';
import { buildHttpApp } from './http/app.js';
import { listen, Shutdown } from './http/lifecycle.js';
import { createHttpServer, expressApp } from './http/server.js';
import { createHttpStreams, type HttpStreams } from './http-streams/index.js';
import { LIVE_CONNECTIONS_CLOSE_BUDGET_MS } from './limits.js';
import type { Logger } from './logger.js';
import { createMetrics, type GatewayMetrics } from './observability/metrics.js';
import { startTracing } from './observability/start-tracing.js';
import type { SubscriptionMetrics } from './observability/subscription-metrics.js';
import type { Tracing } from './observability/tracing.js';
import type { AdmissionCheck } from './operations/admission.js';
import type { OperationHook } from './operations/hooks.js';
import { OperationPipeline } from './operations/pipeline.js';
import { ResponseBudget } from './operations/response-budget.js';
import { legacyFailures } from './rest/legacy-answer.js';
import { openApiDocument } from './rest/openapi.js';
import { prepareRoutes, restLayerDocuments } from './rest/prepared-routes.js';
import type { RestRoute } from './rest/route.js';
import { legacyRoutes } from './rest/routes.js';
import { createRateLimits, type RateLimits } from './security/rate-limit.js';
import { TrustedDocuments } from './security/trusted-documents.js';
import { DEMO_USER_ID, demoData } from './seed/demo-data.js';
import { loadSeed, readSeedFile } from './seed/seed-file.js';
import { Closers } from './shared/closers.js';
import { createSubscriptions, type Subscriptions } from './subscriptions/index.js';
import { packageVersion } from './version.js';
import { startWebSocketDoor } from './websocket/websocket-server.js';

export const EMBEDDED_DATABASE_NAME = 'chat-gateway';

export interface ServiceOptions {
  /** The legacy REST endpoints; `legacyRoutes` unless given. */
  restRoutes?: RestRoute[];
  /** The time purchases are settled, credentials expire and the shutdown delay ends by; the system's unless a test moves it by hand. */
  clock?: Clock;
  /**
   * Hooks of one's own, told of every operation of every door (`/graphql`, the REST table,
   * WebSocket, Server-Sent Events, multipart) with the door named: see `OperationHook`.
   */
  operationHooks?: OperationHook[];
  /**
   * Apollo Server plugins of one's own, besides the gateway's: `/graphql` only. They see the
   * `/graphql` requests that reach Apollo Server (not those refused before it, nor multipart
   * subscriptions), and no other door's; `operationHooks` see every door's.
   */
  apolloPlugins?: ApolloServerPlugin<RequestContext>[];
  /** Checks of one's own, run by every door after the per-caller rate limit (see `AdmissionChecks`). */
  admissionChecks?: AdmissionCheck[];
  /**
   * Starts the in-process engine (no MONGODB_URI) with MongoDB's test commands, so that fault tests
   * can inject failures with `configureFailPoint`; never set by the command line or the environment.
   */
  enableTestCommands?: boolean;
  /**
   * The driver's command events on the database's client, for tests that count the commands a
   * request sends. Off otherwise, unless tracing needs them: they cost every command.
   */
  monitorDatabaseCommands?: boolean;
  /** How often the identity provider's key set (JWT_JWKS_URL) may be fetched, and for how long; `PROVIDER_KEY_TIMINGS` unless given. */
  providerKeyTimings?: ProviderKeyTimings;
}

export interface RunningService {
  /** Base URL reachable from this machine, e.g. http://127.0.0.1:4000 */
  url: string;
  database: Database;
  domains: Domains;
  /** The embedded engine's address (a Unix socket), when no MONGODB_URI was given. */
  embeddedUri: string | undefined;
  /** Where the embedded engine keeps its data; undefined in memory, or with MONGODB_URI. */
  dataDir: string | undefined;
  /** A token for the demo user, only while the demo data is loaded (embedded engine, no SEED_FILE). */
  demoToken: string | undefined;
  /** Whether subscriptions are served (at `ws://…/graphql`), and if not, why. */
  subscriptions: Subscriptions['availability'];
  /**
   * Stops as `http/lifecycle.ts` orders it: `/readyz` answers 503 at once while requests are still served for
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
 * balances. Its data lasts in `dataDir` (in memory without one). Closing it removes the socket's
 * directory.
 */
async function startPrivateEngine(enableTestCommands: boolean, dataDir: string | undefined): Promise<EmbeddedServer> {
  const directory = await mkdtemp(join(tmpdir(), 'chat-gateway-'));
  let server: EmbeddedServer;
  try {
    server = await startEmbeddedServer({ socketPath: join(directory, 'mongodb.sock'), enableTestCommands, dataDir });
  } catch (error) {
    await rm(directory, { recursive: true, force: true });
    throw error;
  }
  return {
    uri: server.uri,
    startedEmpty: server.startedEmpty,
    async close() {
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

/**
 * The composition root: configuration → database → domains → GraphQL → doors. Each resource's
 * release is pushed on one stack of closers as soon as it is acquired; `stop()` and a start that
 * fails half-way (a port in use) run the same closers, last in first out.
 */
export async function startService(config: Config, logger: Logger, options: ServiceOptions = {}): Promise<RunningService> {
  // Trusted documents first: a bad PERSISTED_DOCUMENTS file stops the start before anything runs.
  const restRoutes = options.restRoutes ?? legacyRoutes;
  const trustedDocuments = await TrustedDocuments.load(config.persistedDocuments, restLayerDocuments(restRoutes));
  const closers = new Closers();
  try {
    return await serve(config, logger, { ...options, restRoutes, trustedDocuments }, closers);
  } catch (error) {
    await closers
      .close()
      .catch((failure: unknown) => logger.warn({ err: failure }, 'a resource could not be released after a failed start'));
    throw error;
  }
}

type Started = ServiceOptions & { restRoutes: RestRoute[]; trustedDocuments: TrustedDocuments };

/** Traces (the SDK is loaded only with an OTLP endpoint), then the database: the real one, or the embedded engine in this process. */
async function openDatabase(config: Config, logger: Logger, options: ServiceOptions, closers: Closers) {
  const tracing = await startTracing(config.tracing, { name: 'chat-gateway', version: packageVersion }, logger);
  // Last to close, so that the spans of everything else are sent.
  closers.push(() => tracing.shutdown());
  const embedded =
    config.mongodbUri === undefined ? await startPrivateEngine(options.enableTestCommands ?? false, config.dataDir) : undefined;
  if (embedded !== undefined) closers.push(() => embedded.close());
  const monitorCommands = tracing.traceDatabaseCommands !== undefined || options.monitorDatabaseCommands === true;
  const database = await connectDatabase(config.mongodbUri ?? withDatabaseName(embedded!.uri, EMBEDDED_DATABASE_NAME), logger, {
    monitorCommands,
  });
  closers.push(() => database.close());
  tracing.traceDatabaseCommands?.(database.connection.getClient());
  return { tracing, embedded, database };
}

/**
 * The stages in order, each builder handed by name what it uses. Closers are pushed as each
 * resource is acquired; they run last in first out: the shutdown delay, the live connections,
 * the WebSocket door, the HTTP streams, the settlement sweep, Apollo Server (which drains the
 * HTTP server), the metrics, the change feeds, the database, the engine, the traces.
 */
async function serve(config: Config, logger: Logger, options: Started, closers: Closers): Promise<RunningService> {
  const { tracing, embedded, database } = await openDatabase(config, logger, options, closers);
  const clock = options.clock ?? systemClock;
  const domains = buildDomains({ config, logger, database, clock, tracing });
  await buildIndexes(database.connection);
  const demoDataLoaded = await loadData(config, logger, domains, embedded);
  const { authenticator, demoToken } = await buildAuthentication({
    config,
    logger,
    clock,
    accounts: domains.accounts,
    embedded: embedded !== undefined,
    demoDataLoaded,
    providerKeyTimings: options.providerKeyTimings,
  });
  // Live updates: a change feed per collection, when the database has change streams; closed before the database.
  const subscriptions = await createSubscriptions({
    connection: database.connection,
    accounts: domains.accounts.store,
    logger,
  });
  closers.push(() => subscriptions.close());

  const schema = buildSchema([domains.conversations.resolvers, domains.billing.resolvers, subscriptions.resolvers], {
    federation: config.federationSubgraph,
  });
  const restRoutes = prepareRoutes(options.restRoutes, schema);
  const metrics = createMetrics({
    token: config.metricsToken,
    production: config.production,
    knownOperationNames: [...restRoutes.map((route) => route.prepared.name), ...options.trustedDocuments.operationNames],
    database,
    domainMetrics: [...(domains.billing.official?.metrics ?? []), ...subscriptions.metrics.all],
  });
  closers.push(() => metrics.stop());
  const rateLimits = await createRateLimits({
    requestsPerSecond: config.rateLimit,
    clock,
    sharedIn: config.rateLimitStore === 'mongo' ? database.connection.db : undefined,
  });
  const createContext = contextFactory(domains, subscriptions, config.responseMaxBytes);
  const pipeline = buildPipeline({
    config,
    logger,
    clock,
    schema,
    createContext,
    tracer: tracing.operations,
    metrics: metrics.graphql,
    subscriptionMetrics: subscriptions.metrics,
    admissionChecks: [perCallerRate(rateLimits), ...(options.admissionChecks ?? [])],
    hooks: options.operationHooks,
    trustedDocuments: options.trustedDocuments,
  });

  const app = expressApp(config.trustProxy);
  const httpServer = createHttpServer(app);
  const apollo = createApolloServer(pipeline, {
    production: config.production,
    httpServer,
    plugins: options.apolloPlugins,
    automaticPersistedQueries: !options.trustedDocuments.only,
    batchMax: config.batchMax,
  });
  await apollo.start();
  // Stopping Apollo Server drains the HTTP server: no new connections, in-flight requests finished (bounded).
  closers.push(() => apollo.stop());
  // Settlements write to the database: they stop after the doors close, before the database does.
  const settlementSweep = domains.billing.official?.startSweep(config.settlement.intervalMs);
  if (settlementSweep !== undefined) closers.push(() => settlementSweep.stop());

  const httpStreams = buildDoors({
    config,
    logger,
    clock,
    pipeline,
    httpServer,
    authenticator,
    rateLimits,
    subscriptionMetrics: subscriptions.metrics,
    clientAddress: (request) => proxyAddress(request, app.get('trust proxy fn')),
    closers,
  });
  const shutdown = new Shutdown(config.shutdownDelayMs, clock);
  buildHttpApp(app, {
    requestLog: { logger, activeSpanIds: tracing.activeSpanIds },
    metrics,
    health: {
      dependency: { ping: (timeoutMs) => database.ping(timeoutMs), unavailable: 'database unavailable' },
      shutdown,
      details: subscriptions.metrics.counts,
    },
    corsOrigins: config.corsOrigins,
    addressLimit: rateLimits.byAddress,
    graphql: graphqlDoors({
      apollo,
      httpStreams,
      pipeline,
      createContext,
      authenticator,
      trustedDocuments: options.trustedDocuments,
      batchMax: config.batchMax,
      // The playground offers the printed demo token, except in production.
      playground: config.playground ? { demoToken: config.production ? undefined : demoToken } : undefined,
    }),
    rest: {
      endpoints: restDoor({ restRoutes, pipeline, authenticator, createContext, basePath: config.restBasePath }),
      openApi: JSON.stringify(openApiDocument(options.restRoutes, packageVersion, config.restBasePath)),
      otherwise: legacyFailures('error'),
    },
  });
  httpServer.on('request', tracing.serveRequests(app));
  await listen(httpServer, config.port, config.host);
  closers.push(() => shutdown.begin());
  const { port } = httpServer.address() as AddressInfo;
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  return {
    url: `http://${host}:${port}`,
    database,
    domains,
    embeddedUri: embedded?.uri,
    dataDir: embedded ? config.dataDir : undefined,
    demoToken,
    subscriptions: subscriptions.availability,
    stop: () => closers.close(),
  };
}

/** Each domain's factory, bound to the database: stores, a service per caller, resolvers. */
function buildDomains(parts: { config: Config; logger: Logger; database: Database; clock: Clock; tracing: Tracing }): Domains {
  const { config, logger, database, clock, tracing } = parts;
  const accounts = createAccounts(database);
  const conversations = createConversations(database, logger);
  const { sso, settlement } = config;
  const billing = createBilling({ database, accounts: accounts.store, sso, settlement, logger, clock, tracing: tracing.purchases });
  return { accounts, conversations, billing };
}

/**
 * Who may call: HS256 tokens signed with JWT_SECRET (or a kept or random secret on the embedded
 * engine), a provider's tokens (JWT_JWKS_URL), API keys; and the demo user's token while the demo data is loaded.
 */
async function buildAuthentication(parts: {
  config: Config;
  logger: Logger;
  clock: Clock;
  accounts: Accounts;
  /** Whether the database is this process's embedded engine. */
  embedded: boolean;
  demoDataLoaded: boolean;
  providerKeyTimings: ProviderKeyTimings | undefined;
}): Promise<{ authenticator: Authenticator; demoToken: string | undefined }> {
  const { config } = parts;
  const tokenKey = secretKey(
    config.jwtSecret ?? (config.dataDir ? await keptSecret(config.dataDir) : randomBytes(32).toString('base64url')),
  );
  // The demo user exists only in the demo data (`seed/demo-data.ts`): a seed file has users of its own.
  const demoToken = parts.demoDataLoaded ? await signAccessToken(tokenKey, DEMO_USER_ID) : undefined;
  const provider =
    config.tokenProvider === undefined ? undefined : new ProviderTokens(config.tokenProvider, parts.logger, parts.providerKeyTimings);
  // A real database with only a provider's key set accepts no HS256 token: nobody holds a random secret.
  const secret = config.jwtSecret !== undefined || parts.embedded ? tokenKey : undefined;
  return { authenticator: new Authenticator({ secret, provider }, parts.accounts.store, parts.clock), demoToken };
}

/** One operation pipeline for every door (/graphql, the REST layer, subscriptions), over one schema. */
function buildPipeline(parts: {
  config: Config;
  logger: Logger;
  clock: Clock;
  schema: GraphQLSchema;
  createContext: CreateContext;
  tracer: Tracing['operations'];
  metrics: GatewayMetrics['graphql'];
  subscriptionMetrics: SubscriptionMetrics;
  admissionChecks: AdmissionCheck[];
  hooks: readonly OperationHook[] | undefined;
  trustedDocuments: TrustedDocuments;
}): OperationPipeline {
  const { config, trustedDocuments } = parts;
  const pipeline: OperationPipeline = new OperationPipeline({
    schema: parts.schema,
    production: config.production,
    metrics: parts.metrics,
    logger: parts.logger,
    tracer: parts.tracer,
    admissionChecks: parts.admissionChecks,
    hooks: parts.hooks,
    introspectionUsers: config.introspectionUsers,
    live: {
      createContext: parts.createContext,
      // Subscriptions named by a registered persisted-query hash too: `pipeline` exists by the time one comes.
      documentOf: (reference) => trustedDocuments.documentFor(reference, pipeline.documents),
      subscriptionsPerCaller: config.subscriptionCaps.subscriptionsPerCaller,
      connectionLimits: {
        perCaller: config.subscriptionCaps.connectionsPerCaller,
        perAddress: config.subscriptionCaps.websocketsPerAddress,
      },
      clock: parts.clock,
      metrics: parts.subscriptionMetrics,
    },
  });
  return pipeline;
}

/** The first admission check: the caller's rate limit, one request (or subscribe message) counted. */
function perCallerRate(rateLimits: RateLimits): AdmissionCheck {
  return ({ caller }) => rateLimits.countCaller(caller.userId);
}

/**
 * The subscription doors on the server Apollo Server drains when it stops: the HTTP streams
 * (mounted by the HTTP app) and the WebSocket door (upgraded from the same server, on /graphql
 * too). On stop, the shutdown delay comes first (`/readyz` says 503 while requests are still
 * served), then subscriptions end (WebSockets closed with 1001, event streams completed), then
 * Apollo Server drains the rest.
 */
function buildDoors(parts: {
  config: Config;
  logger: Logger;
  clock: Clock;
  pipeline: OperationPipeline;
  httpServer: Server;
  authenticator: Authenticator;
  rateLimits: RateLimits;
  subscriptionMetrics: SubscriptionMetrics;
  /** The client's address, as the HTTP app reads it (`trust proxy`). */
  clientAddress: (request: IncomingMessage) => string;
  closers: Closers;
}): HttpStreams {
  const { config, logger, clock, pipeline, closers } = parts;
  const httpStreams = createHttpStreams({
    pipeline,
    maxBufferedBytes: config.subscriptionCaps.bufferedBytesPerConnection,
    clock,
    metrics: parts.subscriptionMetrics,
    logger,
  });
  closers.push(() => httpStreams.close());
  const websocketDoor = startWebSocketDoor({
    httpServer: parts.httpServer,
    pipeline,
    authenticator: parts.authenticator,
    rateLimits: parts.rateLimits,
    logger,
    clock,
    limits: {
      bufferedBytesPerConnection: config.subscriptionCaps.bufferedBytesPerConnection,
      messagesPerSecond: config.rateLimit,
    },
    clientAddress: parts.clientAddress,
    corsOrigins: config.corsOrigins,
    metrics: parts.subscriptionMetrics,
  });
  closers.push(() => websocketDoor.close());
  // First of the three: every live connection completed in its protocol's words, within the budget.
  closers.push(() => pipeline.connections.close(LIVE_CONNECTIONS_CLOSE_BUDGET_MS));
  return httpStreams;
}

/**
 * Loads SEED_FILE, or the demo data on the embedded engine without one, into a new data directory
 * only (never over data already there); true when the demo data is there (loaded now, or at the
 * data directory's first start).
 */
async function loadData(config: Config, logger: Logger, domains: Domains, embedded: EmbeddedServer | undefined): Promise<boolean> {
  if (config.seedFile !== undefined) {
    const loaded = await loadSeed(domains, await readSeedFile(config.seedFile), {
      source: config.seedFile,
      onProgress: (progress) => logger.info({ seedFile: config.seedFile, ...progress }, 'seeding'),
    });
    logger.info({ seedFile: config.seedFile, ...loaded }, 'seed file loaded');
    return false;
  }
  if (embedded === undefined) return false;
  if (embedded.startedEmpty) await loadSeed(domains, demoData);
  return true;
}

/** The context of each request: the caller's services, each made when a resolver first asks for it, and a budget of its own. */
function contextFactory(domains: Domains, subscriptions: Subscriptions, responseMaxBytes: number): CreateContext {
  const services = {
    conversations: domains.conversations.forCaller,
    billing: domains.billing.forCaller,
    subscriptions: subscriptions.forCaller,
  };
  return (caller, requestId, observation) =>
    new RequestContext(caller, requestId, observation, new ResponseBudget(responseMaxBytes), services);
}
