import { connect, createServer, type Socket } from 'node:net';

/** A TCP relay between a client and a server that a test can cut, as a network or a failover would. */
export interface TcpProxy {
  port: number;
  /** Resets every relayed connection (RST, as a restarted peer or a middlebox does) and every new one, until `restore`. */
  cut(): void;
  /** Relays again, to `target` from now on when given (a restarted server elsewhere). */
  restore(target?: number): void;
  close(): Promise<void>;
}

/** Listens on 127.0.0.1 (a free port) and relays each connection to 127.0.0.1:`targetPort`. */
export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  let target = targetPort;
  let open = true;
  const pairs = new Set<[Socket, Socket]>();
  const server = createServer((client) => {
    if (!open) return void client.resetAndDestroy();
    const upstream = connect(target, '127.0.0.1');
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const drop = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop).pipe(upstream);
    upstream.on('error', drop).on('close', drop).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const cutAll = () => {
    for (const [client, upstream] of pairs) {
      client.resetAndDestroy();
      upstream.resetAndDestroy();
    }
    pairs.clear();
  };
  return {
    port: (server.address() as { port: number }).port,
    cut() {
      open = false;
      cutAll();
    },
    restore(newTarget) {
      if (newTarget !== undefined) target = newTarget;
      open = true;
    },
    async close() {
      open = false;
      cutAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
