import {
  MongoNetworkError,
  MongoNotConnectedError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
} from 'mongodb';
import mongoose, { type Connection } from 'mongoose';
import { AccountStore } from '../accounts/account.store.js';
import type { Stores } from '../context.js';
import { ConversationStore } from '../conversations/conversation.store.js';
import type { Logger } from '../logger.js';
import { bindModels, type Models } from './models.js';

export interface Database {
  connection: Connection;
  models: Models;
  stores: Stores;
  /** Resolves when the server answers a ping within `timeoutMs`. */
  ping(timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

/** How long an operation waits for an unreachable server before failing, instead of hanging. */
const SERVER_SELECTION_TIMEOUT_MS = 2_000;
/** Opening a connection (and each heartbeat) to a server that does not answer. */
const CONNECT_TIMEOUT_MS = 2_000;
/** A server that accepted a command but stopped answering (hung, paused, network partition). */
const SOCKET_TIMEOUT_MS = 3_000;

export async function connectDatabase(uri: string, logger?: Logger): Promise<Database> {
  const connection = mongoose.createConnection(uri, {
    serverSelectionTimeoutMS: SERVER_SELECTION_TIMEOUT_MS,
    connectTimeoutMS: CONNECT_TIMEOUT_MS,
    socketTimeoutMS: SOCKET_TIMEOUT_MS,
    // Fail at once while disconnected rather than queueing requests in memory.
    bufferCommands: false,
    // Command events feed the database metrics and let tests count commands per request.
    monitorCommands: true,
  });
  let closing = false;
  // Without an 'error' listener a connection error would crash the process.
  connection.on('error', (error: unknown) => logger?.error({ err: error }, 'database error'));
  connection.on('disconnected', () => {
    if (!closing) logger?.warn('database unreachable: requests needing it fail with 503 until it is back');
  });
  connection.on('reconnected', () => logger?.info('database reachable again'));
  await connection.asPromise();
  const models = bindModels(connection);
  // Unique indexes must exist before the first write relies on them.
  await Promise.all(Object.values(models).map((model) => model.init()));
  return {
    connection,
    models,
    stores: {
      accounts: new AccountStore(models.users, models.apiKeys),
      conversations: new ConversationStore(models.conversations),
    },
    async ping(timeoutMs) {
      // The driver ignores `timeoutMS`, so the wait is bounded here.
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer to a ping within ${timeoutMs} ms`)), timeoutMs);
      });
      try {
        await Promise.race([connection.db!.command({ ping: 1 }), late]);
      } finally {
        clearTimeout(timer);
      }
    },
    async close() {
      closing = true;
      await connection.close();
    },
  };
}

/** Server codes meaning "this server cannot serve right now" (shutting down, stepping down, not primary). */
const UNAVAILABLE_SERVER_CODES = new Set([91, 189, 10107, 11600, 11602, 13435, 13436]);

/** Whether an error means the database cannot be reached or cannot serve right now, rather than a bug. */
export function isDatabaseUnavailable(error: unknown): boolean {
  return (
    error instanceof MongoNetworkError ||
    error instanceof MongoServerSelectionError ||
    error instanceof MongoTopologyClosedError ||
    error instanceof MongoNotConnectedError ||
    (error instanceof MongoServerError && UNAVAILABLE_SERVER_CODES.has(Number(error.code)))
  );
}
