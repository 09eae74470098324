import { createServer, type Socket } from 'node:net';
import { handleMessage } from './commands/dispatch.js';
import { Engine, type CommandEvent } from './engine.js';
import { MessageFramer } from './wire.js';

export type { CommandEvent } from './engine.js';

export interface EmbeddedServer {
  /** e.g. mongodb://127.0.0.1:54321/?directConnection=true  (no database name in the path) */
  readonly uri: string;
  readonly host: string;
  readonly port: number;
  /** Stops listening and destroys open sockets. */
  close(): Promise<void>;
  /**
   * Commands received since start, by command name (`find`, `insert`, ...).
   * Connection handshakes and the driver's periodic monitoring appear as
   * `isMaster`/`ismaster`/`hello`; leave those out when counting the work of a request.
   */
  commandCounts(): Record<string, number>;
  /** Calls `listener` as each command arrives (before it runs); returns a function that unsubscribes. */
  onCommand(listener: (event: CommandEvent) => void): () => void;
}

/**
 * Starts a MongoDB-compatible server on TCP (default 127.0.0.1 on a free port).
 * Data lives in memory for the life of the server.
 */
export async function startEmbeddedServer(options: { host?: string; port?: number } = {}): Promise<EmbeddedServer> {
  const host = options.host ?? '127.0.0.1';
  const engine = new Engine();
  const sockets = new Set<Socket>();
  let connectionIds = 0;

  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    serveConnection(engine, socket, ++connectionIds);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : (options.port ?? 0);
  const uriHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;

  return {
    uri: `mongodb://${uriHost}:${port}/?directConnection=true`,
    host,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        engine.close();
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
    commandCounts: () => Object.fromEntries(engine.commandCounts),
    onCommand(listener) {
      engine.commandListeners.add(listener);
      return () => engine.commandListeners.delete(listener);
    },
  };
}

/**
 * Reads messages off one connection and answers them in order. Each command
 * runs synchronously from start to finish, so commands never interleave. A
 * message that cannot be read closes this connection only.
 */
function serveConnection(engine: Engine, socket: Socket, connectionId: number): void {
  socket.setNoDelay(true);
  const framer = new MessageFramer();
  socket.on('error', () => socket.destroy());
  socket.on('data', (chunk: Buffer) => {
    try {
      for (const message of framer.push(chunk)) {
        const reply = handleMessage(engine, message, connectionId);
        if (reply) socket.write(reply.length === 1 ? reply[0]! : Buffer.concat(reply));
      }
    } catch {
      socket.destroy();
    }
  });
}
