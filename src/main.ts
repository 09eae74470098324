import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { secretKey, signAccessToken } from './auth/access-token.js';
import { createGateway } from './app.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { connectDatabase } from './db/database.js';
import { startEmbeddedServer, type EmbeddedServer } from './db/embedded/server.js';
import { withDatabaseName } from './db/uri.js';
import { createLogger } from './logger.js';
import { DEMO_USER_ID, demoData } from './seed/demo-data.js';
import { loadSeed, readSeedFile } from './seed/seed-file.js';

const EMBEDDED_DATABASE_NAME = 'chat-gateway';
/** How long in-flight requests may take to finish after SIGTERM. */
const SHUTDOWN_GRACE_MS = 10_000;

async function main(config: Config): Promise<void> {
  const logger = createLogger(config);

  let embedded: EmbeddedServer | undefined;
  if (config.mongodbUri === undefined) {
    embedded = await startEmbeddedServer({ host: '127.0.0.1', port: 0 });
    print(
      '',
      '*** No MONGODB_URI: using the embedded MongoDB-compatible engine. ***',
      `*** Data lives in memory at ${embedded.uri} and is LOST when the process exits. ***`,
      '',
    );
  }
  const database = await connectDatabase(config.mongodbUri ?? withDatabaseName(embedded!.uri, EMBEDDED_DATABASE_NAME));

  if (config.seedFile !== undefined) {
    const loaded = await loadSeed(database.stores, await readSeedFile(config.seedFile));
    logger.info({ seedFile: config.seedFile, ...loaded }, 'seed file loaded');
  } else if (embedded) {
    await loadSeed(database.stores, demoData);
  }

  const tokenKey = secretKey(config.jwtSecret ?? randomBytes(32).toString('base64url'));
  const demoToken =
    config.jwtSecret === undefined || (embedded && config.seedFile === undefined)
      ? await signAccessToken(tokenKey, DEMO_USER_ID)
      : undefined;

  const gateway = await createGateway({ database, tokenKey, production: config.production });
  const server = gateway.app.listen(config.port, config.host);
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  const { port } = server.address() as AddressInfo;
  const base = `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${port}`;

  print(`chat-gateway listening on ${base} (GraphQL at ${base}/graphql, deployment: ${config.deployment})`);
  if (demoToken) {
    print(
      '',
      `Access token for demo user ${DEMO_USER_ID}${config.jwtSecret ? '' : ' (signed with a random secret: set JWT_SECRET to keep tokens valid across restarts)'}:`,
      `  ${demoToken}`,
      'Try:',
      `  curl -H 'Authorization: Bearer ${demoToken}' ${base}/conversation/list`,
      `  curl -H 'Authorization: Bearer ${demoToken}' -H 'Content-Type: application/json' \\`,
      `       -d '{"query":"{ quota conversations(first: 2) { nodes { id name } } }"}' ${base}/graphql`,
      '',
    );
  }

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping: finishing in-flight requests');
    server.closeIdleConnections();
    const forceClose = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS).unref();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    clearTimeout(forceClose);
    await gateway.stop();
    await database.close();
    await embedded?.close();
    logger.info('stopped');
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}

function print(...lines: string[]): void {
  process.stdout.write(`${lines.join('\n')}\n`);
}

try {
  await main(loadConfig());
} catch (error) {
  process.stderr.write(`${error instanceof ConfigError ? error.message : `chat-gateway failed to start: ${String(error)}`}\n`);
  process.exit(1);
}
