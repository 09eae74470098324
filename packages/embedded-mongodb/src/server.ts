import { chmod, stat } from 'node:fs/promises';
import { createServer, type Socket } from 'node:net';
import { dirname } from 'node:path';

import { handleMessage } from './commands/dispatch.js';
import { Engine } from './engine.js';
import { type Clock, systemClock } from './oplog.js';
import { Storage } from './storage.js';
import { MessageFramer, sizeOf } from './wire.js';

export type { Clock } from './oplog.js';
export { DataDirectoryError } from './storage.js';

export interface EmbeddedServerOptions {
  /** TCP address to listen on; default 127.0.0.1. */
  host?: string;
  /** TCP port; default 0 (a free port). */
  port?: number;
  /**
   * Listen on this Unix domain socket instead of TCP. Its directory must be
   * reachable by its owner only (mode 0700); the socket is made 0600.
   */
  socketPath?: string;
  /**
   * The name of the single-member replica set the server presents itself as
   * (default "rs0"), which gives change streams and retryable writes; `false`
   * makes it a standalone server, which refuses both as mongod does.
   */
  replicaSet?: string | false;
  /** Where TTL expiry, cluster times and `$currentDate` read the time (default: the system clock). */
  clock?: Clock;
  /** Time between passes of the TTL monitor (mongod's ttlMonitorSleepSecs); default 60 000 ms. */
  ttlMonitorIntervalMs?: number;
  /** The most change history kept for change streams to resume from; default 64 MiB. */
  oplogSizeBytes?: number;
  /**
   * MongoDB's test commands, as `mongod --setParameter enableTestCommands=1`
   * gives them: `configureFailPoint` with the `failCommand` fail point, for
   * fault tests. Off by default, when `configureFailPoint` does not exist.
   */
  enableTestCommands?: boolean;
  /**
   * Keep the data in this directory (created if missing) so that it lasts:
   * every write is on disk before it is acknowledged, and the data, indexes
   * and change history are there again when a server opens the directory
   * after a stop or a crash. One process at a time may open it. Default:
   * in memory only.
   */
  dataDir?: string;
}

export interface EmbeddedServer {
  /**
   * How to connect, with no database name in the path, e.g.
   * mongodb://127.0.0.1:54321/?directConnection=true or, on a socket,
   * mongodb://%2Ftmp%2Fdb%2Fmongodb.sock/?directConnection=true
   */
  readonly uri: string;
  /** Whether it started with no data: always in memory; with `dataDir`, when the directory held no document. */
  readonly startedEmpty: boolean;
  /** Stops listening, destroys open connections and (with `dataDir`) closes the data directory. */
  close(): Promise<void>;
}

/**
 * Starts a MongoDB-compatible server. Data lives in memory for the life of
 * the server, or in `dataDir`; a data directory that cannot be used (or that
 * another process has open) is refused with a {@link DataDirectoryError}.
 */
export async function startEmbeddedServer(options: EmbeddedServerOptions = {}): Promise<EmbeddedServer> {
  if (options.socketPath !== undefined) await checkPrivateDirectory(dirname(options.socketPath));
  const storage = options.dataDir === undefined ? undefined : Storage.open(options.dataDir);
  try {
    return await serve(options, storage);
  } catch (error) {
    await storage?.close();
    throw error;
  }
}

async function serve(options: EmbeddedServerOptions, storage: Storage | undefined): Promise<EmbeddedServer> {
  const engine = new Engine({
    storage,
    replicaSet: options.replicaSet === false ? undefined : (options.replicaSet ?? 'rs0'),
    clock: options.clock ?? systemClock,
    ttlMonitorIntervalMs: options.ttlMonitorIntervalMs ?? 60_000,
    oplogSizeBytes: options.oplogSizeBytes ?? 64 * 1024 * 1024,
    enableTestCommands: options.enableTestCommands ?? false,
  });
  const sockets = new Set<Socket>();
  let connectionIds = 0;

  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    serveConnection(engine, socket, ++connectionIds);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    const listening = (): void => {
      server.off('error', reject);
      resolve();
    };
    if (options.socketPath !== undefined) server.listen(options.socketPath, listening);
    else server.listen(options.port ?? 0, options.host ?? '127.0.0.1', listening);
  });

  let uri: string;
  if (options.socketPath !== undefined) {
    await chmod(options.socketPath, 0o600);
    engine.address = options.socketPath;
    uri = `mongodb://${encodeURIComponent(options.socketPath)}/?directConnection=true`;
  } else {
    const host = options.host ?? '127.0.0.1';
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : (options.port ?? 0);
    const uriHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
    engine.address = `${uriHost}:${port}`;
    uri = `mongodb://${engine.address}/?directConnection=true`;
  }

  return {
    uri,
    startedEmpty: storage?.isNew ?? true,
    close: async () => {
      await new Promise<void>((resolve) => {
        engine.close();
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      });
      await storage?.close();
    },
  };
}

/** A socket is only as private as its directory: refuse one that others can enter. */
async function checkPrivateDirectory(directory: string): Promise<void> {
  const info = await stat(directory);
  if (!info.isDirectory() || (info.mode & 0o077) !== 0) {
    throw new Error(`${directory} must be a directory only its owner can access (mode 0700) to hold the engine's socket`);
  }
}

/** A reply smaller than this is joined into one buffer for its write: cheaper than a writev of small pieces. */
const JOIN_BELOW = 64 * 1024;

/**
 * Reads messages off one connection and answers them in order. Each command
 * runs synchronously from start to finish, so commands never interleave; a
 * command that waits (a getMore on an awaitData cursor, a command a fail
 * point blocks) holds back the connection's later messages until it answers.
 * A message that cannot be read, or a fail point that cuts the connection,
 * closes this connection only. With a data directory, no reply leaves before
 * every write made until then is on disk (so nothing is acknowledged, or
 * shown, that a crash could take back); the writes of all connections
 * meanwhile are flushed together.
 */
function serveConnection(engine: Engine, socket: Socket, connectionId: number): void {
  socket.setNoDelay(true);
  engine.connections.set(connectionId, { appName: '' });
  socket.on('close', () => engine.connections.delete(connectionId));
  const framer = new MessageFramer();
  const queue: Buffer[] = [];
  let waiting = false;
  const send = (reply: Buffer[]): void => {
    if (socket.destroyed) return;
    if (reply.length === 1) socket.write(reply[0]!);
    else if (sizeOf(reply) < JOIN_BELOW) socket.write(Buffer.concat(reply));
    else {
      // A large reply goes out as its pieces, in one writev: joining them would copy the batch again.
      socket.cork();
      for (const piece of reply) socket.write(piece);
      socket.uncork();
    }
  };
  const drain = (): void => {
    while (!waiting && queue.length > 0) {
      let reply = handleMessage(engine, queue.shift()!, connectionId);
      if (!reply) continue;
      if (engine.storage) reply = afterDurable(engine.storage, reply);
      if (Array.isArray(reply)) {
        send(reply);
        continue;
      }
      waiting = true;
      reply.then(
        (answer) => {
          waiting = false;
          send(answer);
          drain();
        },
        () => socket.destroy(),
      );
    }
  };
  socket.on('error', () => socket.destroy());
  socket.on('data', (chunk: Buffer) => {
    try {
      queue.push(...framer.push(chunk));
      drain();
    } catch {
      socket.destroy();
    }
  });
}

/** The reply, once every write made before it is on disk (at once when none waits). */
function afterDurable(storage: Storage, reply: Buffer[] | Promise<Buffer[]>): Buffer[] | Promise<Buffer[]> {
  if (Array.isArray(reply)) return storage.pending ? storage.durable().then(() => reply) : reply;
  return reply.then((answer) => (storage.pending ? storage.durable().then(() => answer) : answer));
}
