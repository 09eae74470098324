import { createHash, randomBytes, randomUUID } from 'node:crypto';

import WebSocket from 'ws';

import { rawRequest } from './raw-http.js';

/** How a socket ended: its close code and reason as the client saw them. */
export interface Closed {
  code: number;
  reason: string;
}

/** A message of one operation: a result, its errors, or its end. */
export interface OperationMessage {
  type: 'next' | 'error' | 'complete';
  payload?: any;
}

/** One subscribe message's replies, in order. */
export interface Operation {
  id: string;
  /** The next reply (or fails after `timeoutMs`). */
  next(timeoutMs?: number): Promise<OperationMessage>;
  /** The next reply and when it arrived (performance.now()). */
  nextTimed(timeoutMs?: number): Promise<{ message: OperationMessage; receivedAt: number }>;
  /** Replies received and not yet taken by `next()`. */
  pending(): OperationMessage[];
  /** Tells the server the client is done with it. */
  complete(): void;
}

/**
 * A GraphQL-over-WebSocket client that shows the protocol as it is (close codes, every message),
 * for tests; applications use graphql-ws's `createClient`.
 */
export interface TestSocket {
  socket: WebSocket;
  /** Resolves on `connection_ack`; rejects if the socket closes first. */
  acknowledged: Promise<void>;
  closed: Promise<Closed>;
  subscribe(query: string, variables?: Record<string, unknown>, extra?: Record<string, unknown>): Operation;
  /** Sends a raw text frame. */
  send(text: string): void;
  close(): Promise<Closed>;
}

export interface ConnectOptions {
  /** The `connection_init` payload, e.g. `{ Authorization: 'Bearer …' }`; `null` sends no `connection_init`. */
  connectionParams?: Record<string, unknown> | null;
  headers?: Record<string, string>;
  protocol?: string;
}

/** The answer to an upgrade the server refused, over HTTP. */
export interface Refusal {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

type TimedReply = { message: OperationMessage; receivedAt: number };
type Replies = { queue: TimedReply[]; waiting?: (reply: TimedReply) => void };

/** Opens `ws://…/graphql` and sends `connection_init`; rejects with a `Refusal` when the upgrade is answered over HTTP instead. */
export function connect(baseUrl: string, options: ConnectOptions = {}): Promise<TestSocket> {
  const url = `${baseUrl.replace(/^http/, 'ws')}/graphql`;
  const socket = new WebSocket(url, options.protocol ?? 'graphql-transport-ws', { headers: options.headers });
  const replies = new Map<string, Replies>();
  const closed = new Promise<Closed>((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  let acknowledge!: () => void;
  let refuse!: (error: Error) => void;
  const acknowledged = new Promise<void>((resolve, reject) => {
    acknowledge = resolve;
    refuse = reject;
  });
  acknowledged.catch(() => {});
  void closed.then(({ code, reason }) => refuse(new Error(`socket closed before connection_ack: ${code} ${reason}`)));

  socket.on('message', (data) => {
    const message = JSON.parse(data.toString()) as { type: string; id?: string; payload?: unknown };
    if (message.type === 'connection_ack') return acknowledge();
    if (message.type === 'ping') return socket.send(JSON.stringify({ type: 'pong' }));
    if (message.id === undefined) return;
    const operation = replies.get(message.id);
    if (operation === undefined) return;
    const reply = { message: { type: message.type, payload: message.payload } as OperationMessage, receivedAt: performance.now() };
    if (operation.waiting) {
      const deliver = operation.waiting;
      operation.waiting = undefined;
      deliver(reply);
    } else {
      operation.queue.push(reply);
    }
  });

  const testSocket: TestSocket = {
    socket,
    acknowledged,
    closed,
    send: (text) => socket.send(text),
    subscribe(query, variables, extra = {}) {
      const id = randomUUID();
      const operation: Replies = { queue: [] };
      replies.set(id, operation);
      socket.send(JSON.stringify({ id, type: 'subscribe', payload: { query, variables, ...extra } }));
      const nextTimed = (timeoutMs = 5_000): Promise<TimedReply> => {
        const queued = operation.queue.shift();
        if (queued) return Promise.resolve(queued);
        return new Promise((resolve, reject) => {
          const timer = setTimeout(() => {
            operation.waiting = undefined;
            reject(new Error(`no reply to subscription ${id} within ${timeoutMs} ms`));
          }, timeoutMs);
          operation.waiting = (reply) => {
            clearTimeout(timer);
            resolve(reply);
          };
        });
      };
      return {
        id,
        pending: () => operation.queue.map((reply) => reply.message),
        complete: () => socket.send(JSON.stringify({ id, type: 'complete' })),
        nextTimed,
        next: async (timeoutMs) => (await nextTimed(timeoutMs)).message,
      };
    },
    async close() {
      socket.close(1000);
      return closed;
    },
  };

  return new Promise((resolve, reject) => {
    socket.once('open', () => {
      if (options.connectionParams !== null) {
        socket.send(JSON.stringify({ type: 'connection_init', payload: options.connectionParams ?? {} }));
      }
      resolve(testSocket);
    });
    socket.once('unexpected-response', (_request, response) => {
      let body = '';
      response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      response.on('end', () =>
        reject(
          Object.assign(new Error(`upgrade refused: ${response.statusCode}`), {
            refusal: { status: response.statusCode!, headers: response.headers, body },
          }),
        ),
      );
    });
    socket.once('error', (error) => reject(error));
  });
}

/** The HTTP answer a refused upgrade got. */
export async function refusalOf(opening: Promise<TestSocket>): Promise<Refusal> {
  try {
    const socket = await opening;
    await socket.close();
  } catch (error) {
    const { refusal } = error as { refusal?: Refusal };
    if (refusal) return refusal;
    throw error;
  }
  throw new Error('the upgrade was accepted');
}

/** Opens an authenticated socket and waits for `connection_ack`. */
export async function connectAs(
  baseUrl: string,
  authorization: string,
  options: Omit<ConnectOptions, 'connectionParams'> = {},
): Promise<TestSocket> {
  const socket = await connect(baseUrl, { ...options, connectionParams: { Authorization: authorization } });
  await socket.acknowledged;
  return socket;
}

/** The GUID the WebSocket standard appends to a handshake's key (RFC 6455 §1.3). */
const WEBSOCKET_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/**
 * A graphql-transport-ws opening handshake on `target` exactly as given (a client's URL parser
 * would normalise it), and the `Sec-WebSocket-Accept` a server that accepts it answers.
 */
export function websocketHandshake(target: string, host: string): { request: string; accept: string } {
  const key = randomBytes(16).toString('base64');
  const request = rawRequest('GET', target, [
    ['Host', host],
    ['Connection', 'Upgrade'],
    ['Upgrade', 'websocket'],
    ['Sec-WebSocket-Version', '13'],
    ['Sec-WebSocket-Key', key],
    ['Sec-WebSocket-Protocol', 'graphql-transport-ws'],
  ]);
  return {
    request,
    accept: createHash('sha1')
      .update(key + WEBSOCKET_GUID)
      .digest('base64'),
  };
}
