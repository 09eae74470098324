import { MongoClient, type Collection, type Db, type MongoClientOptions, type ObjectId } from 'mongodb';
import { startTestDatabase, type TestDatabase } from '../support/database.js';

/** Documents of any shape: the tests choose their own `_id` types, which the driver's schema typing would refuse. */
/* eslint-disable @typescript-eslint/no-explicit-any */
export interface AnyDocument {
  _id?: number | string | ObjectId;
  [field: string]: any;
}
/* eslint-enable @typescript-eslint/no-explicit-any */

export interface Connected {
  database: TestDatabase;
  client: MongoClient;
  db: Db;
  collection(name: string): Collection<AnyDocument>;
  stop(): Promise<void>;
}

/** A fresh test database (embedded, or real MongoDB when MONGODB_URI is set) and a driver client on it. */
export async function connect(options: MongoClientOptions = {}): Promise<Connected> {
  const database = await startTestDatabase();
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
