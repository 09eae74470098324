import { connect, createServer, type Socket } from 'node:net';

import { BSON, type Document } from 'mongodb';

/** A TCP relay between a client and a server that a test can cut, as a network or a failover would. */
export interface TcpProxy {
  port: number;
  /** Resets every relayed connection (RST, as a restarted peer or a middlebox does) and every new one, until `restore`. */
  cut(): void;
  /** Relays again, to `target` from now on when given (a restarted server elsewhere). */
  restore(target?: number): void;
  /**
   * Loses the replies to the next `times` MongoDB commands that `matches` (their body, e.g.
   * `{update: 'users', updates: […], $db: …}`): the command reaches the server, which runs it and
   * answers; the answer is dropped and the connection reset, as when a network fails after the
   * server acted. mongod's `failCommand` cannot do this: its `closeConnection` acts before the
   * command runs.
   */
  loseReplies(matches: (command: Document) => boolean, times?: number): void;
  /** The commands whose replies were lost so far, oldest first. */
  lostReplies(): Document[];
  /**
   * Holds the reply to the next command that `matches` until `release` has run: whatever the test
   * does meanwhile happens after the server ran that command and before the client hears of it.
   */
  holdReply(matches: (command: Document) => boolean, release: () => Promise<unknown>): void;
  /** Forgets the replies still to be lost or held: commands to come are relayed as they are. */
  relayAll(): void;
  close(): Promise<void>;
}

/** Where the proxy relays to. */
export interface ProxyTarget {
  host: string;
  port: number;
}

const OP_MSG = 2013;
const HEADER_BYTES = 16;

/** Splits a stream of MongoDB wire messages (each led by its int32 length) into whole messages. */
class MessageFramer {
  private pending: Buffer = Buffer.alloc(0);

  constructor(private readonly onMessage: (message: Buffer) => void) {}

  push(chunk: Buffer): void {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    while (this.pending.length >= 4) {
      const length = this.pending.readInt32LE(0);
      if (this.pending.length < length) return;
      const message = this.pending.subarray(0, length);
      this.pending = this.pending.subarray(length);
      this.onMessage(message);
    }
  }
}

/** The command document of an OP_MSG request (its body section), or undefined for other messages. */
function commandOf(message: Buffer): Document | undefined {
  if (message.length < HEADER_BYTES + 5 || message.readInt32LE(12) !== OP_MSG) return undefined;
  // After the header, the flag bits (4 bytes) and sections; kind 0 is the body, one BSON document.
  let offset = HEADER_BYTES + 4;
  while (offset < message.length) {
    const kind = message[offset]!;
    const size = message.readInt32LE(offset + 1);
    if (kind === 0) return BSON.deserialize(message.subarray(offset + 1, offset + 1 + size));
    // A document sequence: its size counts itself but not the kind byte.
    offset += 1 + size;
  }
  return undefined;
}

/** Listens on 127.0.0.1 (a free port) and relays each connection to `target` (a port on 127.0.0.1, or a host and port). */
export async function startTcpProxy(target: number | ProxyTarget): Promise<TcpProxy> {
  let destination: ProxyTarget = typeof target === 'number' ? { host: '127.0.0.1', port: target } : target;
  let open = true;
  const pairs = new Set<[Socket, Socket]>();
  /** What happens to the replies of the next commands that match: lost (the connection reset), or held until released. */
  const rules: { matches: (command: Document) => boolean; remaining: number; fate: 'lose' | (() => Promise<unknown>) }[] = [];
  const lost: Document[] = [];

  const server = createServer((client) => {
    if (!open) return void client.resetAndDestroy();
    const upstream = connect(destination.port, destination.host);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const drop = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    /** The fate of each reply to come, by its request's id, with the request's command. */
    const fates = new Map<number, { command: Document; fate: 'lose' | (() => Promise<unknown>) }>();
    const requests = new MessageFramer((message) => {
      const armed = rules.filter((rule) => rule.remaining > 0);
      const command = armed.length === 0 ? undefined : commandOf(message);
      const rule = command && armed.find((candidate) => candidate.matches(command));
      if (command && rule) {
        rule.remaining -= 1;
        fates.set(message.readInt32LE(4), { command, fate: rule.fate });
      }
      upstream.write(message);
    });
    // Replies leave in the order they came, each after the ones held before it.
    let sending = Promise.resolve();
    const replies = new MessageFramer((message) => {
      const doomed = fates.get(message.readInt32LE(8));
      if (doomed?.fate === 'lose') {
        lost.push(doomed.command);
        pairs.delete(pair);
        client.resetAndDestroy();
        upstream.destroy();
        return;
      }
      const release = doomed?.fate;
      sending = sending.then(async () => {
        if (release !== undefined) await release().catch(() => undefined);
        if (!client.destroyed) client.write(message);
      });
    });
    client
      .on('error', drop)
      .on('close', drop)
      .on('data', (chunk: Buffer) => requests.push(chunk));
    upstream
      .on('error', drop)
      .on('close', drop)
      .on('data', (chunk: Buffer) => replies.push(chunk));
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
      if (newTarget !== undefined) destination = { ...destination, port: newTarget };
      open = true;
    },
    loseReplies(matches, times = 1) {
      rules.push({ matches, remaining: times, fate: 'lose' });
    },
    holdReply(matches, release) {
      rules.push({ matches, remaining: 1, fate: release });
    },
    relayAll() {
      rules.length = 0;
    },
    lostReplies: () => [...lost],
    async close() {
      open = false;
      cutAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
