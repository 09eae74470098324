import { CloseCode, type Server, type WebSocket as WebSocketOfProtocol } from 'graphql-ws';
import type { WebSocket } from 'ws';

import type { Logger } from '../logger.js';
import { answerText } from '../operations/shared-executions.js';

/**
 * Hands a socket to graphql-ws's protocol server (`makeServer`), as graphql-ws's own binding for
 * `ws` (`useServer`) does, for as long as the socket is open. `extra` is what the protocol's
 * context holds for this socket: given by the caller, where `useServer` holds the upgrade request
 * with its headers for the socket's whole life. Keep-alive pings are the caller's too, one beat
 * for every socket (`useServer` runs a timer per socket), and so is the socket's `close`
 * listener, which tells graphql-ws with `protocolClosed` (one listener a socket rather than
 * two). Unlike `useServer`, `send` does not wait for the client to take a message before
 * graphql-ws sends the next one: a client that stops reading is dropped once the server holds
 * more than the unsent-data bound for it, as the HTTP streams' readers are, not held one message
 * behind until the keep-alive beat. A message whose handling fails closes the socket with 1011,
 * as with `useServer`, and is logged here rather than on the console.
 */
export function openProtocol<E>(server: Server<E>, websocket: WebSocket, extra: E, logger: Logger): void {
  const socket = new ProtocolSocket(websocket, logger);
  protocolSockets.set(websocket, socket);
  socket.closed = server.opened(socket, extra);
}

/** graphql-ws's view of each open socket, for the socket's listeners (see `protocolClosed`). */
const protocolSockets = new WeakMap<WebSocket, ProtocolSocket>();

/** `websocket` closed: graphql-ws ends what it holds for it (called by the socket's `close` listener). */
export function protocolClosed(websocket: WebSocket, code: number, reason: Buffer): void {
  void protocolSockets.get(websocket)?.closed?.(code, String(reason));
}

/** ws calls a listener with the socket as `this`: one function for every socket, rather than a closure each. */
function protocolMessage(this: WebSocket, data: WebSocket.RawData): void {
  protocolSockets.get(this)?.received(String(data));
}

/**
 * graphql-ws's view of one socket: methods on one object rather than a closure for each, as an
 * idle socket holds it for its whole life.
 */
class ProtocolSocket implements WebSocketOfProtocol {
  /** graphql-ws's end of the socket (`opened`'s answer). */
  closed: ((code?: number, reason?: string) => Promise<void>) | undefined;
  /** graphql-ws's handler of the socket's messages. */
  private handle: ((data: string) => Promise<void>) | undefined;

  constructor(
    private readonly websocket: WebSocket,
    private readonly logger: Logger,
  ) {}

  get protocol(): string {
    return this.websocket.protocol;
  }

  /**
   * Queued, not awaited: graphql-ws takes the next event at once, so what a client leaves unread
   * piles up on the socket, where the unsent-data bound drops it (see `boundedWebSocketClass`).
   * The shared payload text is put back in the same step as graphql-ws's stringify (see `withHandedOverPayload`).
   */
  send(text: string): void {
    const data = withHandedOverPayload(text);
    if (this.websocket.readyState === this.websocket.OPEN) this.websocket.send(data);
  }

  close(code?: number, reason?: string): void {
    this.websocket.close(code, reason);
  }

  onMessage(handle: (data: string) => Promise<void>): void {
    this.handle = handle;
    this.websocket.on('message', protocolMessage);
  }

  received(data: string): void {
    this.handle?.(data).catch((error: unknown) => {
      this.logger.error({ err: error }, 'a WebSocket message could not be handled: its socket is closed with 1011');
      this.websocket.close(CloseCode.InternalServerError, 'Internal server error');
    });
  }
}

/**
 * The payload of the `next` message graphql-ws is serialising, taken out of its text by
 * `nextPayloadReplacer` and not yet put back by the socket's `send`.
 */
let handedOver: string | undefined;
/** The message `JSON.stringify` is serialising now: the value of the replacer's first call (key ''). */
let serialising: unknown;
/** How graphql-ws's text of a `next` message ends once its payload is left out: `{"id":…,"type":"next"}`. */
const NEXT_WITHOUT_PAYLOAD = '"type":"next"}';

/**
 * graphql-ws's `jsonMessageReplacer`, so that the answer of an event is serialised once for every
 * subscription that shares it rather than once per message: graphql-ws builds each message as
 * `{id, type: 'next', payload}` and sends `JSON.stringify(message, replacer)`, its one hook
 * over that text (`onNext` can only replace the payload object, which graphql-ws would
 * serialise again). The replacer leaves the payload out, handing over its shared text
 * (`answerText`), and the socket's `send` (`withHandedOverPayload`), which graphql-ws calls
 * with that text in the same synchronous step (`socket.send(stringifyMessage(…))`), puts it
 * back where graphql-ws writes it, last: the frame is byte for byte graphql-ws's own. Any other
 * message, and anything inside one, is serialised as it is.
 */
export function nextPayloadReplacer(this: unknown, key: string, value: unknown): unknown {
  if (key === '') serialising = value;
  else if (key === 'payload' && this === serialising && isNextMessage(this) && typeof value === 'object' && value !== null) {
    handedOver = answerText(value);
    return undefined;
  }
  return value;
}

/** A `next` message as graphql-ws builds it: `id`, `type` and `payload`, in that order. */
function isNextMessage(message: unknown): boolean {
  if (typeof message !== 'object' || message === null || (message as { type?: unknown }).type !== 'next') return false;
  const keys = Object.keys(message);
  return keys.length === 3 && keys[0] === 'id' && keys[1] === 'type' && keys[2] === 'payload';
}

/** The text graphql-ws sends, with the payload `nextPayloadReplacer` took out of it put back. */
function withHandedOverPayload(text: string): string {
  const payload = handedOver;
  handedOver = undefined;
  serialising = undefined;
  if (payload === undefined) return text;
  // Never expected: graphql-ws would have sent something other than the message it serialised.
  if (!text.endsWith(NEXT_WITHOUT_PAYLOAD)) throw new Error('a next message was sent without the payload it was serialised with');
  return `${text.slice(0, -1)},"payload":${payload}}`;
}
