import { createServer, type Socket } from 'node:net';
import { handleMessage } from './commands/dispatch.js';
import { Engine } from './engine.js';
import { MessageFramer } from './wire.js';

export interface EmbeddedServerOptions {
  /** TCP address to listen on; default 127.0.0.1. */
  host?: string;
  /** TCP port; default 0 (a free port). */
  port?: number;
}

export interface EmbeddedServer {
  /** e.g. mongodb://127.0.0.1:54321/?directConnection=true  (no database name in the path) */
  readonly uri: string;
  /** Stops listening and destroys open connections. */
  close(): Promise<void>;
}

/**
 * Starts a MongoDB-compatible server on TCP (default 127.0.0.1 on a free port).
 * Data lives in memory for the life of the server.
 */
export async function startEmbeddedServer(options: EmbeddedServerOptions = {}): Promise<EmbeddedServer> {
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
    close: () =>
      new Promise<void>((resolve) => {
        engine.close();
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
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
