import { WebSocket } from 'ws';

import type { Clock } from '../clock.js';
import { MessageRate } from '../security/rate-limit.js';

/** What one socket may cost the server. */
export interface SocketLimits {
  /** Data held unsent for the socket (see `MESSAGE_BOOKKEEPING_BYTES`) past which it is dropped. */
  maxBufferedBytes: number;
  /** Messages a second the socket may send, every kind counted (see `MessageRate`); 0: no limit. */
  messagesPerSecond: number;
}

/** Why the server ended a socket itself. */
export type EndedFor = 'unread data' | 'too many messages';

/** The WebSocket standard's close code for a message against the server's policy (here: over the message rate). */
export const POLICY_VIOLATION = 1008;

/**
 * What the server keeps besides the bytes of each message it has not yet written out: the
 * stream's entries and the frame header, graphql-ws's pending handler and promise. Measured: a
 * client that sends empty pings and never reads costs about 330 bytes per unanswered ping.
 */
const MESSAGE_BOOKKEEPING_BYTES = 512;

/** Arguments of `send` after the data: options and callback, or the callback alone (as graphql-ws calls it). */
type SendOptions = Parameters<WebSocket['send']>[1];
type SendCallback = (error?: Error) => void;

/**
 * The `WebSocket` class for the server's sockets (ws's `WebSocket` option), which bounds what a
 * client can make the server hold or do, whether it sent `connection_init` or not:
 *
 * - Whatever the server has not yet written out for the socket, bytes and messages, is checked
 *   before each message and ping it sends (graphql-ws's results, its pongs echoing a ping's
 *   payload, the keep-alive pings): past `maxBufferedBytes` the socket is dropped at once,
 *   without a closing handshake that a client who does not read would never read either.
 * - Every message the client sends (graphql-ws's, and WebSocket pings and pongs) counts toward
 *   the socket's message rate; over it, the socket is closed with 1008.
 * - Once the socket is closing, nothing more it sends is handled, and a message that could not
 *   be written does not fail its sender: it is lost with the connection, whose end is logged once
 *   (graphql-ws would log an error for each pending message).
 */
export function boundedWebSocketClass(limits: SocketLimits, clock: Pick<Clock, 'now'>) {
  return class BoundedWebSocket extends WebSocket {
    /** Why the server ended this socket itself, if it did. */
    endedFor: EndedFor | undefined;
    private unsentMessages = 0;
    private awaitingPong = false;
    private readonly rate = new MessageRate(limits.messagesPerSecond, clock);

    override send(data: Parameters<WebSocket['send']>[0], optionsOrCallback?: SendOptions | SendCallback, callback?: SendCallback): void {
      const [options, done] = typeof optionsOrCallback === 'function' ? [{}, optionsOrCallback] : [optionsOrCallback ?? {}, callback];
      if (this.holdsTooMuch()) return done?.();
      this.unsentMessages += 1;
      super.send(data, options, () => {
        this.unsentMessages -= 1;
        done?.();
      });
    }

    override ping(...args: Parameters<WebSocket['ping']>): void {
      if (!this.holdsTooMuch()) super.ping(...args);
    }

    /** One keep-alive beat: a socket that did not answer the last beat's ping is dropped, any other pinged. */
    keepAlive(): void {
      if (this.readyState !== WebSocket.OPEN) return;
      if (this.awaitingPong) return this.terminate();
      this.awaitingPong = true;
      this.ping();
    }

    /** Every message and control frame the client sends passes here before any listener sees it. */
    override emit(event: string | symbol, ...args: unknown[]): boolean {
      if (event === 'message' || event === 'ping' || event === 'pong') {
        if (this.readyState !== WebSocket.OPEN) return false;
        if (event === 'pong') this.awaitingPong = false;
        if (!this.rate.take()) {
          this.endedFor = 'too many messages';
          this.close(POLICY_VIOLATION, `too many messages: at most ${limits.messagesPerSecond} a second`);
          return false;
        }
      }
      return super.emit(event, ...args);
    }

    private holdsTooMuch(): boolean {
      if (this.bufferedAmount + this.unsentMessages * MESSAGE_BOOKKEEPING_BYTES <= limits.maxBufferedBytes) return false;
      this.endedFor ??= 'unread data';
      this.terminate();
      return true;
    }
  };
}

/** A socket of the server. */
export type BoundedWebSocket = InstanceType<ReturnType<typeof boundedWebSocketClass>>;
