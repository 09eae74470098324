import type { RequestListener } from 'node:http';

import type { MongoClient } from 'mongodb';

import type { Door } from './labels.js';

/**
 * Traces (docs/operations.md): what the rest of the service asks of them, with nothing of OpenTelemetry
 * in its types. Without `OTEL_EXPORTER_OTLP_ENDPOINT` the service runs on `NO_TRACING`, and no
 * OpenTelemetry module is ever loaded: every hook below is then a plain call that does nothing.
 */
export interface Tracing {
  /**
   * The HTTP server's request listener, each request a server span that continues the caller's
   * `traceparent`, and the context everything the request does runs in.
   */
  serveRequests(listener: RequestListener): RequestListener;
  operations: OperationTracer;
  purchases: PurchaseTracing;
  /**
   * Makes each database command sent on behalf of a traced piece of work a span of it, from the
   * driver's command monitoring (on only when this is given: it costs every command).
   */
  traceDatabaseCommands?: (client: MongoClient) => void;
  /** The ids of the span work runs in now, for log lines: logs and traces meet on them. */
  activeSpanIds(): SpanIds | undefined;
  /** Sends the spans still held (waiting a bounded time for the collector), then stops. */
  shutdown(): Promise<void>;
}

export interface SpanIds {
  traceId: string;
  spanId: string;
}

/** The GraphQL operation spans, one per operation of every door (and per subscription event). */
export interface OperationTracer {
  /**
   * Starts an operation's span in the context active now (the HTTP request's, if any), or, with
   * `ownTrace`, as a trace of its own: a subscription's event, whatever runs when its change comes.
   */
  start(door: Door, ownTrace?: boolean): OperationSpan;
}

export interface OperationSpan {
  /** Names it after its operation; `name` is already bounded (`boundedOperationName`), undefined when anonymous. */
  named(type: string, name: string | undefined): void;
  /** Runs `work` inside the operation's span, so that what it does (database commands, provider calls) are its spans. */
  within<T>(work: () => T): T;
  /** Ends it with the codes of its errors (none: a success); never their messages, which may carry what a caller sent. */
  end(errorCodes: readonly string[]): void;
}

/** How work on a purchase is traced: its settlement, later and perhaps elsewhere, links back to the buy that opened it. */
export interface PurchaseTracing {
  /**
   * A purchase is being opened in the active span: tags that span with its order id and answers
   * the span's W3C `traceparent`, to be stored with the purchase (undefined when not traced).
   */
  opening(orderId: string): string | undefined;
  /**
   * Runs `work` on one purchase in a span of its own; once `work` has read the purchase, it tells
   * `openedIn` the `traceparent` stored with it, and the span links to the span that opened it.
   */
  settling<T>(orderId: string, work: (openedIn: (traceparent: string | undefined) => void) => Promise<T>): Promise<T>;
}

const NO_OPERATION_SPAN: OperationSpan = {
  named() {},
  within: (work) => work(),
  end() {},
};

/** No traces: what the service runs on without an OTLP endpoint. */
export const NO_TRACING: Tracing = {
  serveRequests: (listener) => listener,
  operations: { start: () => NO_OPERATION_SPAN },
  purchases: { opening: () => undefined, settling: (_orderId, work) => work(() => {}) },
  activeSpanIds: () => undefined,
  shutdown: async () => {},
};

/** What the spans of a process say it is: `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` win. */
export interface TracedService {
  name: string;
  version: string;
}
