import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { secretKey, signAccessToken } from './auth/access-token.js';
import { createGateway } from './app.js';
import { createOfficialBilling } from './billing/official-billing.js';
import { createSsoClient } from './billing/sso-client.js';
import type { Config } from './config.js';
import { connectDatabase, type Database } from './db/database.js';
import { startEmbeddedServer, type EmbeddedServer } from './db/embedded/server.js';
import { withDatabaseName } from './db/uri.js';
import type { Logger } from './logger.js';
import { DEMO_USER_ID, demoData } from './seed/demo-data.js';
import { loadSeed, readSeedFile } from './seed/seed-file.js';

const EMBEDDED_DATABASE_NAME = 'chat-gateway';
/** How long in-flight requests may take to finish once stopping. */
const SHUTDOWN_GRACE_MS = 10_000;
/** While stopping, how often keep-alive connections whose last response went out are closed. */
const IDLE_SWEEP_MS = 100;
/** Requests whose headers (with the request line) exceed this are refused with 431: Node's default, made explicit. */
const MAX_HEADER_BYTES = 16 * 1024;

export interface RunningService {
  /** Base URL reachable from this machine, e.g. http://127.0.0.1:4000 */
  url: string;
  database: Database;
  /** The embedded engine's address, when no MONGODB_URI was given. */
  embeddedUri: string | undefined;
  /** A token for the demo user, printed at start when tokens are signed with a random secret or demo data was loaded. */
  demoToken: string | undefined;
  /** Stops accepting, lets in-flight requests finish (bounded), then closes the database. */
  stop(): Promise<void>;
}

/** Wires configuration → database (embedded when MONGODB_URI is unset) → seed → app → listen. */
export async function startService(config: Config, logger: Logger): Promise<RunningService> {
  let embedded: EmbeddedServer | undefined;
  if (config.mongodbUri === undefined) {
    embedded = await startEmbeddedServer({ host: '127.0.0.1', port: 0 });
  }
  const database = await connectDatabase(
    config.mongodbUri ?? withDatabaseName(embedded!.uri, EMBEDDED_DATABASE_NAME),
    logger,
  );

  const loadDemoData = embedded !== undefined && config.seedFile === undefined;
  if (config.seedFile !== undefined) {
    const loaded = await loadSeed(database.stores, await readSeedFile(config.seedFile));
    logger.info({ seedFile: config.seedFile, ...loaded }, 'seed file loaded');
  } else if (loadDemoData) {
    await loadSeed(database.stores, demoData);
  }

  // Official deployment: buying and gifts go through the SSO provider (community never calls it).
  const officialBilling =
    config.sso === undefined
      ? undefined
      : createOfficialBilling(database.models, database.stores.accounts, createSsoClient(config.sso), logger);

  const tokenKey = secretKey(config.jwtSecret ?? randomBytes(32).toString('base64url'));
  const demoToken =
    config.jwtSecret === undefined || loadDemoData ? await signAccessToken(tokenKey, DEMO_USER_ID) : undefined;

  const gateway = await createGateway({
    database,
    services: { stores: database.stores, officialBilling },
    tokenKey,
    production: config.production,
    rateLimit: config.rateLimit,
    logger,
    metricsToken: config.metricsToken,
    trustProxy: config.trustProxy,
    // The playground offers the printed demo token, except in production.
    playground: config.playground ? { demoToken: config.production ? undefined : demoToken } : undefined,
  });
  const server = createServer({ maxHeaderSize: MAX_HEADER_BYTES }, gateway.app).listen(config.port, config.host);
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  const { port } = server.address() as AddressInfo;
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  const settlementSweep = officialBilling?.settlement.startSweep(config.settlementIntervalMs);

  return {
    url: `http://${host}:${port}`,
    database,
    embeddedUri: embedded?.uri,
    demoToken,
    async stop() {
      await closeGracefully(server);
      await gateway.stop();
      // Settlements write to the database: they finish (or are stopped) before it closes.
      await settlementSweep?.stop();
      await database.close();
      await embedded?.close();
    },
  };
}

async function closeGracefully(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const closeIdle = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
  const forceClose = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
  await closed;
  clearInterval(closeIdle);
  clearTimeout(forceClose);
}
