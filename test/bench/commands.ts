import type { CommandStartedEvent } from 'mongodb';

import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { startService } from '../../src/service.js';
import { call, type Scenario } from './scenarios.js';

const CONNECTION_CHATTER = new Set(['hello', 'isMaster', 'ismaster']);
const REQUESTS = 5;

/**
 * Database commands per request, counted by a probe: the same gateway code
 * started in this process (production settings, same database) with the
 * driver's command monitoring, called over real HTTP. The measured gateway runs
 * in its own process, where nothing can listen to its driver.
 */
export async function commandsPerRequest(uri: string, jwtSecret: string, all: readonly Scenario[]): Promise<Map<string, number>> {
  const config = loadConfig({
    DATA_DIR: 'memory',
    PORT: '0',
    HOST: '127.0.0.1',
    MONGODB_URI: uri,
    JWT_SECRET: jwtSecret,
    NODE_ENV: 'production',
    LOG_LEVEL: 'silent',
    RATE_LIMIT: '0',
  });
  const service = await startService(config, createLogger(config), { monitorDatabaseCommands: true });
  const client = service.database.connection.getClient();
  let seen = 0;
  const listener = (event: CommandStartedEvent) => {
    if (!CONNECTION_CHATTER.has(event.commandName)) seen++;
  };
  const counts = new Map<string, number>();
  try {
    for (const scenario of all) {
      if (scenario.target !== 'gateway') continue;
      await call(service.url, scenario);
      client.on('commandStarted', listener);
      seen = 0;
      for (let index = 0; index < REQUESTS; index++) await call(service.url, scenario);
      client.off('commandStarted', listener);
      counts.set(scenario.name, seen / REQUESTS);
    }
  } finally {
    await service.stop();
  }
  return counts;
}
