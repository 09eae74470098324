import mongoose, { type Connection } from 'mongoose';

import type { Logger } from '../logger.js';
import { DatabaseCommands } from './database-commands.js';
import { describeMongodbUri, uriOption } from './uri.js';

/** What a domain's stores need of the database: the connection to bind their models to, and where their commands are timed. */
export type StoreDatabase = Pick<Database, 'connection' | 'commands'>;

export interface Database {
  /** Each domain binds its models to it. */
  connection: Connection;
  /** Every store's commands pass here, counted and timed for the database metrics. */
  commands: DatabaseCommands;
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
/**
 * How the gateway's connections introduce themselves: MongoDB logs it with each connection and
 * slow operation, and shows it in `$currentOp` and the profiler. `appName` in the connection
 * string wins, so each deployment can name its own.
 */
export const DEFAULT_APP_NAME = 'chat-gateway';

export interface DatabaseOptions {
  /**
   * How long one command may go unanswered: `SOCKET_TIMEOUT_MS` unless given. Commands of a
   * request are small; a bulk write of a batch job may legitimately take longer.
   */
  socketTimeoutMs?: number;
  /**
   * The driver's command monitoring: an event before and after every command, for the spans of
   * database commands and for tests that count commands. Off unless asked: it costs every command.
   */
  monitorCommands?: boolean;
}

export async function connectDatabase(uri: string, logger?: Logger, options: DatabaseOptions = {}): Promise<Database> {
  const connection = mongoose.createConnection(uri, {
    serverSelectionTimeoutMS: SERVER_SELECTION_TIMEOUT_MS,
    connectTimeoutMS: CONNECT_TIMEOUT_MS,
    socketTimeoutMS: options.socketTimeoutMs ?? SOCKET_TIMEOUT_MS,
    // Fail at once while disconnected rather than queueing requests in memory.
    bufferCommands: false,
    monitorCommands: options.monitorCommands ?? false,
    ...(uriOption(uri, 'appName') === undefined && { appName: DEFAULT_APP_NAME }),
  });
  let closing = false;
  let connected = false;
  // Without an 'error' listener a connection error would crash the process. Until the first
  // connection, failures are the caller's to report (once): the service does not start.
  connection.on('error', (error: unknown) => {
    if (connected) logger?.error({ err: error }, 'database error');
  });
  connection.on('disconnected', () => {
    if (connected && !closing) logger?.warn('database unreachable: requests needing it fail with 503 until it is back');
  });
  connection.on('reconnected', () => logger?.info('database reachable again'));
  try {
    await connection.asPromise();
  } catch (error) {
    await connection.close().catch(() => undefined);
    throw new Error(`could not connect to the database at ${describeMongodbUri(uri)}: ${(error as Error).message}`, { cause: error });
  }
  connected = true;
  return {
    connection,
    commands: new DatabaseCommands(),
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

/** Builds the indexes of every model bound to the connection: unique indexes must exist before the first write relies on them. */
export async function buildIndexes(connection: Connection): Promise<void> {
  await Promise.all(Object.values(connection.models).map((model) => model.init()));
}
