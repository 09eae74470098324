import type { ServerResponse } from 'node:http';

import type { Logger } from '../logger.js';
import type { SubscriptionTransport } from '../observability/labels.js';
import type { SubscriptionMetrics } from '../observability/subscription-metrics.js';
import type { ConnectionEnds, LiveConnection } from '../operations/live-connections.js';

export interface StreamedResponsesOptions {
  transport: SubscriptionTransport;
  /** What the server may hold unsent for one response, in bytes: past it, the connection is dropped. */
  maxBufferedBytes: number;
  metrics: SubscriptionMetrics;
  logger: Logger;
}

/**
 * One response that streams a live connection's events, from its headers to its end: the HTTP
 * side of a `LiveConnection`. It writes each frame without waiting for the client, within the
 * unsent-data bound; its end ends the connection, as its socket closes with it (see
 * `StreamedResponses.track`).
 */
export class StreamedResponse {
  /** Why the server dropped it, if it did. */
  endedFor: 'unread data' | undefined;
  /** How the stream ends cleanly (its protocol's last words, then the response's end), until it has or nothing more can be written. */
  private finishing: ((response: ServerResponse) => void) | undefined;

  constructor(
    readonly response: ServerResponse,
    readonly connection: LiveConnection,
    private readonly maxBufferedBytes: number,
    finish: (response: ServerResponse) => void,
  ) {
    // The door's own function, shared by its streams: no closure of its own for each idle stream.
    this.finishing = finish;
  }

  get closed(): Promise<void> {
    return this.connection.closed;
  }

  /** Whether nothing more can be written: the client went, the server dropped it, or it finished. */
  get isOver(): boolean {
    return this.finishing === undefined || !this.connection.isOpen || this.response.destroyed || this.response.writableEnded;
  }

  /**
   * Writes `chunk` without waiting for the client to read it, if the client has taken what it
   * was sent before: past `maxBufferedBytes` still unsent (the response's own queue, and its
   * socket's), the connection is dropped at once, as a client that does not read would not read
   * an end either. The bound is on what the client has not taken yet, not on the frame: one
   * event larger than the bound reaches a client that keeps up. Answers false once nothing more
   * can be written.
   */
  write(chunk: string): boolean {
    if (this.isOver) return false;
    if (this.response.writableLength > this.maxBufferedBytes) {
      this.drop();
      return false;
    }
    this.response.write(chunk);
    return true;
  }

  /**
   * Writes a keep-alive frame, the one way both doors keep a stream alive: only when nothing is
   * waiting to be sent (a stream still sending needs none), so that a keep-alive never counts
   * against a reader busy taking a large event.
   */
  keepAlive(frame: string): void {
    if (this.response.headersSent && this.response.writableLength === 0) this.write(frame);
  }

  /** Ends the stream in its protocol's words, once (nothing when the connection is gone). */
  finish(): void {
    const finishing = this.finishing;
    this.finishing = undefined;
    if (finishing !== undefined && !this.response.destroyed && !this.response.writableEnded) finishing(this.response);
  }

  /** Cuts the connection: the socket under it closes. */
  cut(): void {
    this.finishing = undefined;
    this.response.destroy();
    this.response.req.socket.resetAndDestroy();
  }

  private drop(): void {
    this.endedFor = 'unread data';
    this.cut();
  }
}

/** What a door does for one of its streams when the connection ends it (see `ConnectionEnds`); `cut` is the stream's own. */
export type StreamEnds = Omit<ConnectionEnds, 'cut'>;

/**
 * The streaming responses of one HTTP subscription door: counted while open
 * (`graphql_event_streams_open`), each bounded (see `StreamedResponse`), its end logged once.
 * The connection of each, and its completion when the server stops, are the pipeline's
 * (`LiveConnections`).
 */
export class StreamedResponses {
  private readonly open = new Set<StreamedResponse>();

  constructor(private readonly options: StreamedResponsesOptions) {}

  /**
   * Tracks `response` for `connection` (whose socket the connection watches): until it closes.
   * A response is never kept alive after a stream: a request pipelined behind it waits unrun, and
   * goes with the connection. So the socket closes with the response, and the connection's watch
   * of it is the stream's end, whichever went first (no `close` listener of the response's own:
   * past its two, its listeners' array would grow to 19 slots). `finish` writes its protocol's end.
   */
  track(response: ServerResponse, connection: LiveConnection, finish: (response: ServerResponse) => void): StreamedResponse {
    const { transport, metrics, logger, maxBufferedBytes } = this.options;
    const stream = new StreamedResponse(response, connection, maxBufferedBytes, finish);
    response.shouldKeepAlive = false;
    this.open.add(stream);
    metrics.eventStreamOpened(transport);
    void connection.closed.then(() => {
      this.open.delete(stream);
      metrics.eventStreamClosed(transport);
      if (!response.destroyed && !response.writableFinished) stream.cut();
      if (stream.endedFor !== undefined) {
        logger.info({ transport, endedFor: stream.endedFor }, `event stream ended by the server: ${stream.endedFor}`);
      }
    });
    return stream;
  }

  /**
   * Lets `writing`, the door's loop that writes `stream`, run apart from the route that opened
   * the stream. A route step's pending promise would keep Express's dispatch (the router's and the
   * route's `next`, their frames over the request) for the stream's whole life. The headers are
   * sent by then, so a failure of the loop can only be logged, and the stream cut.
   */
  detach(stream: StreamedResponse, writing: Promise<void>): void {
    const { transport, logger } = this.options;
    writing.catch((error: unknown) => {
      logger.error({ err: error, transport }, 'event stream failed');
      stream.cut();
    });
  }

  /** Each open stream, for a beat that writes to all of them. */
  each(write: (stream: StreamedResponse) => void): void {
    for (const stream of this.open) write(stream);
  }
}
