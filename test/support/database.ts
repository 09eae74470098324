import { randomBytes } from 'node:crypto';

import { startEmbeddedServer } from '@chat-gateway/embedded-mongodb';
import { MongoClient } from 'mongodb';

import { withDatabaseName } from '../../src/db/uri.js';

export interface TestDatabase {
  /** Connection string including the database name. */
  uri: string;
  dbName: string;
  /** Drops the database (real MongoDB) or stops the engine (embedded). */
  stop(): Promise<void>;
}

/**
 * A fresh database for one test file: on the real MongoDB named by
 * `MONGODB_URI` when set, otherwise on an embedded engine on a free loopback port
 * (with MongoDB's test commands, `configureFailPoint`, when `enableTestCommands`).
 */
export async function startTestDatabase(options: { enableTestCommands?: boolean } = {}): Promise<TestDatabase> {
  const dbName = `test_${randomBytes(6).toString('hex')}`;
  const external = process.env.MONGODB_URI;
  if (external) {
    const uri = withDatabaseName(external, dbName);
    return {
      uri,
      dbName,
      async stop() {
        const client = await MongoClient.connect(uri);
        try {
          await client.db(dbName).dropDatabase();
        } finally {
          await client.close();
        }
      },
    };
  }
  const server = await startEmbeddedServer({ host: '127.0.0.1', port: 0, enableTestCommands: options.enableTestCommands });
  return { uri: withDatabaseName(server.uri, dbName), dbName, stop: () => server.close() };
}
