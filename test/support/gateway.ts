import type { CommandStartedEvent } from 'mongodb';

import { secretKey, signAccessToken } from '../../src/auth/access-token.js';
import { loadConfig } from '../../src/config.js';
import { createLogger, type Logger } from '../../src/logger.js';
import { loadSeed, type SeedData } from '../../src/seed/seed-file.js';
import { type Domains, type RunningService, type ServiceOptions, startService } from '../../src/service.js';
import { startTestDatabase, type TestDatabase } from './database.js';

export const TEST_JWT_SECRET = 'a-test-secret-of-some-length-0123456789';

export interface TestGateway extends RunningService {
  testDatabase: TestDatabase;
  /** Every domain's Mongoose models, for looking at (or breaking) what is stored. */
  models: Domains['accounts']['models'] & Domains['conversations']['models'] & Domains['billing']['models'];
  /** A valid access token for `userId`. */
  token(userId: number): Promise<string>;
  seed(data: SeedData): Promise<void>;
  /** Names of the database commands sent while `work` runs (handshakes and heartbeats excluded). */
  commandsDuring(work: () => Promise<unknown>): Promise<string[]>;
}

/**
 * The real service, on a fresh test database (or on `database`, which stays the caller's to
 * stop), listening on 127.0.0.1 on a free port; logging nowhere unless given a logger, on the
 * system's clock unless given one.
 */
export async function startTestGateway(
  environment: Record<string, string> = {},
  options: ServiceOptions & { logger?: Logger; database?: TestDatabase } = {},
): Promise<TestGateway> {
  const testDatabase = options.database ?? (await startTestDatabase());
  const config = loadConfig({
    DATA_DIR: 'memory',
    PORT: '0',
    HOST: '127.0.0.1',
    MONGODB_URI: testDatabase.uri,
    JWT_SECRET: TEST_JWT_SECRET,
    LOG_LEVEL: 'silent',
    RATE_LIMIT: '0',
    ...environment,
  });
  // Command events on, so that tests can count the commands a request sends (`commandsDuring`).
  const service = await startService(config, options.logger ?? createLogger(config), { monitorDatabaseCommands: true, ...options });
  const key = secretKey(TEST_JWT_SECRET);
  const { accounts, conversations, billing } = service.domains;
  return {
    ...service,
    testDatabase,
    models: { ...accounts.models, ...conversations.models, ...billing.models },
    token: (userId) => signAccessToken(key, userId),
    seed: async (data) => {
      await loadSeed(service.domains, data);
    },
    commandsDuring: (work) => commandsDuring(service, work),
    async stop() {
      await service.stop();
      if (options.database === undefined) await testDatabase.stop();
    },
  };
}

/** Names of the database commands `service` sends while `work` runs (handshakes and heartbeats excluded). */
export async function commandsDuring(service: Pick<RunningService, 'database'>, work: () => Promise<unknown>): Promise<string[]> {
  const seen: string[] = [];
  const client = service.database.connection.getClient();
  // Without them nothing would be seen, and a test expecting no command would pass for nothing.
  if (client.options.monitorCommands !== true) throw new Error('commandsDuring needs a service started with monitorDatabaseCommands');
  const listener = (event: CommandStartedEvent) => {
    if (!['hello', 'isMaster', 'ismaster'].includes(event.commandName)) seen.push(event.commandName);
  };
  client.on('commandStarted', listener);
  try {
    await work();
  } finally {
    client.off('commandStarted', listener);
  }
  return seen;
}

export interface GraphQLResponse<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: { data?: T | null; errors?: { message: string; extensions?: { code?: string } }[] };
}

/** POSTs one operation to /graphql; `authorization` is sent as is when given. */
export async function graphql<T = any>(
  gateway: Pick<RunningService, 'url'>,
  query: string,
  options: { variables?: Record<string, unknown>; authorization?: string } = {},
): Promise<GraphQLResponse<T>> {
  const response = await fetch(`${gateway.url}/graphql`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(options.authorization === undefined ? {} : { authorization: options.authorization }),
    },
    body: JSON.stringify({ query, variables: options.variables }),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as GraphQLResponse<T>['body'] };
}
