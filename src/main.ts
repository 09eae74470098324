import { ConfigError, loadConfig } from './config.js';
import { createLogger } from './logger.js';
import { DEMO_USER_ID } from './seed/demo-data.js';
import { startService } from './service.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config);
  const service = await startService(config, logger);
  const { url, demoToken, embeddedUri } = service;

  if (embeddedUri) {
    print(
      '',
      '*** No MONGODB_URI: using the embedded MongoDB-compatible engine. ***',
      `*** Data lives in memory (${embeddedUri}) and is LOST when the process exits. ***`,
    );
  }
  print('', `chat-gateway listening on ${url}  (GraphQL and playground: ${url}/graphql, deployment: ${config.deployment})`);
  if (demoToken) {
    print(
      '',
      `Access token for demo user ${DEMO_USER_ID}${config.jwtSecret ? '' : ' (random signing secret: set JWT_SECRET to keep tokens valid across restarts)'}:`,
      `  ${demoToken}`,
      'Try:',
      `  curl -H 'Authorization: Bearer ${demoToken}' ${url}/conversation/list`,
      `  curl -H 'Authorization: Bearer ${demoToken}' -H 'Content-Type: application/json' \\`,
      `       -d '{"query":"{ quota conversations(first: 2) { nodes { id name } } }"}' ${url}/graphql`,
    );
  }
  print('');

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping: finishing in-flight requests');
    try {
      await service.stop();
      logger.info('stopped');
      process.exit(0);
    } catch (error) {
      logger.error({ err: error }, 'could not stop cleanly');
      process.exit(1);
    }
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}

function print(...lines: string[]): void {
  process.stdout.write(`${lines.join('\n')}\n`);
}

try {
  await main();
} catch (error) {
  const reason = error instanceof ConfigError ? error.message : `chat-gateway failed to start: ${String(error)}`;
  process.stderr.write(`${reason}\n`);
  process.exit(1);
}
