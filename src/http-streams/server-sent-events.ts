import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

import type { Request as ExpressRequest, RequestHandler, Response as ExpressResponse } from 'express';
import type { FormattedExecutionResult } from 'graphql';
import {
  createHandler,
  type ExecutionResult,
  type Handler as SseHandler,
  type Request as SseRequest,
  type RequestParams,
  TOKEN_HEADER_KEY,
  TOKEN_QUERY_KEY,
} from 'graphql-sse';

import type { Caller } from '../auth/authenticator.js';
import { callerOf } from '../auth/require-caller.js';
import type { Clock } from '../clock.js';
import { SSE_PATH } from '../http/route-paths.js';
import { requestIdOf } from '../observability/request-log.js';
import type { OperationPipeline } from '../operations/pipeline.js';
import { answerOnce, type LiveResults, type SubscribeRequest, SubscriptionFailure } from '../operations/subscriptions.js';
import { isRecord } from '../shared/is-record.js';
import type { StreamedResponses } from './streamed-responses.js';

/** A single-connection stream reserved (PUT) and not connected within this long is let go, so reservations cannot pile up. */
const RESERVATION_MS = 30_000;

/** What graphql-sse's handler knows of one HTTP request: its caller and id. */
interface SseContext {
  caller: Caller;
  requestId: string;
}

type Handler = SseHandler<IncomingMessage | undefined, SseContext>;

export interface ServerSentEventsDoor {
  handle: RequestHandler;
  /** Completes every running operation (its `complete` event sent), then ends every stream. */
  close(): Promise<void>;
}

/**
 * The Server-Sent Events door: the `graphql-sse` protocol (graphql-sse's own handler, through its
 * hooks), in both its modes, on `/graphql/stream`. Distinct connections: each `POST` with
 * `Accept: text/event-stream` is one subscription and its stream. Single connection: `PUT`
 * reserves a stream (answering its token), a `GET` with the token connects it, each `POST` with
 * the token (`X-GraphQL-Event-Stream-Token`) adds an operation to it, `DELETE ?operationId=`
 * completes one. A token names a stream of its own caller only.
 *
 * The route before it admits the caller (credentials, the admission sequence, the body's limit);
 * `onSubscribe` hands each operation to `pipeline.subscribe` and returns what it yields: a refusal
 * or a failure is its last `next` event, with errors, before `complete`. The door writes the
 * handler's stream itself, without waiting for the client, bounded (`StreamedResponses`).
 */
export function serverSentEvents(pipeline: OperationPipeline, streams: StreamedResponses, clock: Clock): ServerSentEventsDoor {
  const running = new Set<LiveResults>();
  const handler: Handler = createHandler<IncomingMessage | undefined, SseContext>({
    schema: pipeline.schema,
    authenticate: streamToken,
    async onSubscribe(request, params) {
      const { caller, requestId } = request.context;
      const answer = await pipeline.subscribe(withDocumentId(request, params), { caller, door: 'sse', requestId });
      const results = 'refused' in answer ? answerOnce({ errors: answer.refused }) : new EndingWithErrors(answer, running);
      // graphql-sse types results as graphql-js's; these are formatted already, and it writes each as JSON.
      return results as unknown as AsyncGenerator<ExecutionResult>;
    },
  });
  const reservations = new Reservations(handler, clock);
  return {
    async handle(request, response) {
      const context: SseContext = { caller: callerOf(response), requestId: requestIdOf(request) };
      await serve(handler, reservations, streams, sseRequest(request, context), response);
    },
    async close() {
      reservations.close();
      await Promise.all([...running].map((results) => results.return()));
      // Each operation's `complete` event is queued once its loop sees the end (promise jobs, no I/O); then every stream ends.
      await new Promise(setImmediate);
      await streams.close(() => {});
    },
  };
}

/** Answers one request with the handler, writing an event stream as it comes. */
async function serve(
  handler: Handler,
  reservations: Reservations,
  streams: StreamedResponses,
  request: SseRequest<IncomingMessage | undefined, SseContext>,
  response: ExpressResponse,
): Promise<void> {
  const [body, init] = await handler(request);
  // graphql-sse says `no-cache`; every authenticated answer here is `no-store`.
  response.writeHead(init.status, init.statusText, { ...init.headers, 'cache-control': 'no-store' });
  if (body === null || typeof body === 'string') {
    if (request.method === 'PUT' && init.status === 201 && typeof body === 'string') reservations.add(body, request.context);
    response.end(body ?? undefined);
    return;
  }
  reservations.connected(request.headers.get(TOKEN_HEADER_KEY));
  response.flushHeaders();
  const stream = streams.track(response, () => void body.return());
  response.once('close', () => void body.return());
  try {
    for await (const message of body) if (!stream.write(message)) break;
  } finally {
    if (!response.destroyed) response.end();
  }
}

/** graphql-sse's request, from Express's: the JSON body already read by the route's steps. */
function sseRequest(request: ExpressRequest, context: SseContext): SseRequest<IncomingMessage, SseContext> {
  return {
    method: request.method,
    url: request.url,
    headers: { get: (name) => request.get(name) },
    body: (request.body as Record<string, unknown> | undefined) ?? null,
    raw: request,
    context,
  };
}

/**
 * What a request names to run, as the pipeline reads it: graphql-sse's parameters (`query`,
 * `variables`, `operationName`, `extensions`) and a trusted document's `documentId`, which
 * graphql-sse does not read, from the JSON body or the URL as `/graphql` takes it.
 */
function withDocumentId(request: SseRequest<IncomingMessage | undefined, SseContext>, params: RequestParams): SubscribeRequest {
  const documentId = isRecord(request.body)
    ? request.body.documentId
    : (new URL(request.url, 'http://localhost').searchParams.get('documentId') ?? undefined);
  return documentId === undefined ? params : { ...params, documentId };
}

/**
 * The stream a request names, scoped to its caller: tokens are made `<user id>.<random>`, and a
 * token of another caller names a stream that does not exist. Without a token, a fresh one.
 */
function streamToken(request: SseRequest<IncomingMessage | undefined, SseContext>): string {
  const prefix = `${request.context.caller.userId}.`;
  const given = request.headers.get(TOKEN_HEADER_KEY) ?? new URL(request.url, 'http://localhost').searchParams.get(TOKEN_QUERY_KEY);
  if (!given) return `${prefix}${randomUUID()}`;
  return given.startsWith(prefix) ? given : `${prefix}${given}`;
}

/**
 * Single-connection streams reserved and not yet connected. graphql-sse keeps a reservation until
 * its stream connects and ends; one never connected is let go after `RESERVATION_MS`, by
 * connecting it and ending it at once through the handler.
 */
class Reservations {
  private readonly pending = new Map<string, () => void>();

  constructor(
    private readonly handler: Handler,
    private readonly clock: Clock,
  ) {}

  add(token: string, context: SseContext): void {
    this.pending.set(
      token,
      this.clock.schedule(() => this.letGo(token, context), RESERVATION_MS),
    );
  }

  connected(token: string | null | undefined): void {
    if (!token) return;
    this.pending.get(token)?.();
    this.pending.delete(token);
  }

  close(): void {
    for (const cancel of this.pending.values()) cancel();
    this.pending.clear();
  }

  private async letGo(token: string, context: SseContext): Promise<void> {
    this.pending.delete(token);
    const headers = { get: (name: string) => (name === 'accept' ? 'text/event-stream' : name === TOKEN_HEADER_KEY ? token : null) };
    const [body] = await this.handler({ method: 'GET', url: SSE_PATH, headers, body: null, raw: undefined, context });
    if (body !== null && typeof body !== 'string') await body.return();
  }
}

/** A subscription's results, a failure of its stream turned into a last answer with its errors (graphql-sse has no error event). */
class EndingWithErrors implements LiveResults {
  private failed = false;

  constructor(
    private readonly results: LiveResults,
    /** The door's running operations, which this one belongs to until it ends. */
    private readonly running: Set<LiveResults>,
  ) {
    running.add(this);
  }

  next(): Promise<IteratorResult<FormattedExecutionResult>> {
    if (this.failed) return this.return();
    return this.results.next().then(this.passOn, this.lastAnswer);
  }

  return(): Promise<IteratorResult<FormattedExecutionResult>> {
    this.running.delete(this);
    return this.results.return();
  }

  throw(): Promise<IteratorResult<FormattedExecutionResult>> {
    return this.results.return();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  private readonly passOn = (next: IteratorResult<FormattedExecutionResult>): IteratorResult<FormattedExecutionResult> => {
    if (next.done) this.running.delete(this);
    return next;
  };

  private readonly lastAnswer = (error: unknown): IteratorResult<FormattedExecutionResult> => {
    if (!(error instanceof SubscriptionFailure)) throw error;
    this.failed = true;
    return { value: { errors: error.errors }, done: false };
  };
}
