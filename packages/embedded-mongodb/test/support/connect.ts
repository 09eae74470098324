import { randomBytes } from 'node:crypto';

import { type Collection, type Db, MongoClient, type MongoClientOptions, type ObjectId } from 'mongodb';

import { type EmbeddedServerOptions, startEmbeddedServer } from '../../src/index.js';

export interface TestDatabase {
  /** Connection string of the server (no database name in it). */
  uri: string;
  /** A fresh database name for this test file. */
  dbName: string;
  /** Drops the database (real MongoDB) or stops the engine (embedded). */
  stop(): Promise<void>;
}

/**
 * A fresh database for one test file: on the real MongoDB named by
 * `MONGODB_URI` when set, otherwise on an embedded engine on a free loopback port.
 */
export async function startTestDatabase(options: EmbeddedServerOptions = {}): Promise<TestDatabase> {
  const dbName = `test_${randomBytes(6).toString('hex')}`;
  const external = process.env.MONGODB_URI;
  if (external) {
    return {
      uri: external,
      dbName,
      async stop() {
        const client = await MongoClient.connect(external);
        try {
          await client.db(dbName).dropDatabase();
        } finally {
          await client.close();
        }
      },
    };
  }
  const server = await startEmbeddedServer({ host: '127.0.0.1', port: 0, ...options });
  return { uri: server.uri, dbName, stop: () => server.close() };
}

/**
 * Whether the server under test is a replica set member: the embedded engine
 * is one by default; a MONGODB_URI may name a standalone, where change streams
 * and retryable writes do not exist.
 */
export async function servesReplicaSet(): Promise<boolean> {
  const external = process.env.MONGODB_URI;
  if (!external) return true;
  const client = await MongoClient.connect(external);
  try {
    return (await client.db('admin').command({ hello: 1 })).setName !== undefined;
  } finally {
    await client.close();
  }
}

/** Documents of any shape: the tests choose their own `_id` types, which the driver's schema typing would refuse. */
export interface AnyDocument {
  _id?: number | string | ObjectId;
  [field: string]: any;
}

export interface Connected {
  database: TestDatabase;
  client: MongoClient;
  db: Db;
  collection(name: string): Collection<AnyDocument>;
  stop(): Promise<void>;
}

/** A fresh test database (embedded, or real MongoDB when MONGODB_URI is set) and a driver client on it. */
export async function connect(options: MongoClientOptions = {}, server: EmbeddedServerOptions = {}): Promise<Connected> {
  const database = await startTestDatabase(server);
  const client = await MongoClient.connect(database.uri, options);
  return {
    database,
    client,
    db: client.db(database.dbName),
    collection: (name) => client.db(database.dbName).collection<AnyDocument>(name),
    async stop() {
      await client.close();
      await database.stop();
    },
  };
}

/** The server error a promise rejects with (fails the test when it resolves). */
export async function serverError(work: Promise<unknown>): Promise<Record<string, unknown> & { code?: number; message: string }> {
  try {
    await work;
  } catch (error) {
    return error as Record<string, unknown> & { code?: number; message: string };
  }
  throw new Error('expected the server to refuse the operation');
}
