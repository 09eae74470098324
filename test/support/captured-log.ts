import { loadConfig } from '../../src/config.js';
import { createLogger, type Logger } from '../../src/logger.js';
import { type RunningService, startService } from '../../src/service.js';
import { startTestDatabase } from './database.js';
import { TEST_JWT_SECRET } from './gateway.js';

export interface CapturedLog {
  /** The service's own logger (same options as in production), writing to memory. */
  logger: Logger;
  /** Everything logged so far, as written. */
  text(): string;
  /** Every line, parsed. */
  lines(): Record<string, unknown>[];
}

export function captureLog(): CapturedLog {
  let text = '';
  const logger = createLogger({ logLevel: 'info' }, { write: (chunk: string) => void (text += chunk) });
  return {
    logger,
    text: () => text,
    lines: () =>
      text
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

/** The real service on a fresh test database, logging at `info` into memory. Tokens: `TEST_JWT_SECRET`. */
export async function startGatewayWithCapturedLog(
  environment: Record<string, string> = {},
): Promise<RunningService & { log: CapturedLog }> {
  const testDatabase = await startTestDatabase();
  const log = captureLog();
  const config = loadConfig({
    DATA_DIR: 'memory',
    PORT: '0',
    HOST: '127.0.0.1',
    MONGODB_URI: testDatabase.uri,
    JWT_SECRET: TEST_JWT_SECRET,
    RATE_LIMIT: '0',
    ...environment,
  });
  const service = await startService(config, log.logger, { monitorDatabaseCommands: true });
  return {
    ...service,
    log,
    async stop() {
      await service.stop();
      await testDatabase.stop();
    },
  };
}
