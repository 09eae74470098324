import type { ServerResponse } from 'node:http';

import type { Logger } from '../logger.js';
import type { SubscriptionTransport } from '../observability/labels.js';
import type { SubscriptionMetrics } from '../observability/subscription-metrics.js';

export interface StreamedResponsesOptions {
  transport: SubscriptionTransport;
  /** What the server may hold unsent for one response, in bytes: past it, the connection is dropped. */
  maxBufferedBytes: number;
  metrics: SubscriptionMetrics;
  logger: Logger;
}

/** One response that streams a subscription's events, from its headers to its end. */
export class StreamedResponse {
  /** Why the server dropped it, if it did. */
  endedFor: 'unread data' | undefined;
  private finishing: (() => void) | undefined;
  readonly closed: Promise<void>;

  constructor(
    readonly response: ServerResponse,
    private readonly maxBufferedBytes: number,
    /** How the stream ends cleanly: its protocol's last words, then the response's end. */
    finish: (response: ServerResponse) => void,
  ) {
    this.finishing = () => finish(response);
    this.closed = new Promise((resolve) => response.once('close', () => resolve()));
  }

  /** Whether nothing more can be written: the client went, the server dropped it, or it finished. */
  get isOver(): boolean {
    return this.finishing === undefined || this.response.destroyed || this.response.writableEnded;
  }

  /**
   * Writes `chunk` without waiting for the client to read it; past `maxBufferedBytes` held unsent,
   * the connection is dropped at once (a client that does not read would not read an end either).
   * Answers false once nothing more can be written.
   */
  write(chunk: string): boolean {
    if (this.isOver) return false;
    this.response.write(chunk);
    if (this.response.writableLength <= this.maxBufferedBytes) return true;
    this.finishing = undefined;
    this.endedFor = 'unread data';
    this.response.destroy();
    return false;
  }

  /** Ends the stream in its protocol's words, once (nothing when the connection is gone). */
  finish(): void {
    const finishing = this.finishing;
    this.finishing = undefined;
    if (finishing !== undefined && !this.response.destroyed && !this.response.writableEnded) finishing();
  }
}

/**
 * The streaming responses of one HTTP subscription door: each bounded (see `StreamedResponse`),
 * counted while open (`graphql_event_streams_open`), its end logged once, and every one finished
 * cleanly when the server stops.
 */
export class StreamedResponses {
  private readonly open = new Set<StreamedResponse>();
  private closing = false;

  constructor(private readonly options: StreamedResponsesOptions) {}

  get isClosing(): boolean {
    return this.closing;
  }

  /** Tracks `response` (whose headers the door has written) until it closes; `finish` writes its protocol's end. */
  track(response: ServerResponse, finish: (response: ServerResponse) => void): StreamedResponse {
    const { transport, metrics, logger, maxBufferedBytes } = this.options;
    const stream = new StreamedResponse(response, maxBufferedBytes, finish);
    this.open.add(stream);
    metrics.eventStreamOpened(transport);
    void stream.closed.then(() => {
      this.open.delete(stream);
      metrics.eventStreamClosed(transport);
      if (stream.endedFor !== undefined) {
        logger.info({ transport, endedFor: stream.endedFor }, `event stream ended by the server: ${stream.endedFor}`);
      }
    });
    return stream;
  }

  /** Each open stream, for a beat that writes to all of them. */
  each(write: (stream: StreamedResponse) => void): void {
    for (const stream of this.open) write(stream);
  }

  /** Finishes every open stream (`end` ends what feeds it first) and resolves once they are closed. */
  async close(end: (stream: StreamedResponse) => Promise<void> | void): Promise<void> {
    this.closing = true;
    await Promise.all(
      [...this.open].map(async (stream) => {
        await end(stream);
        stream.finish();
        await stream.closed;
      }),
    );
  }
}
