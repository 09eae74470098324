import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

import type { Request as ExpressRequest, Response as ExpressResponse } from 'express';
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
import type { Clock } from '../clock.js';
import type { CallerLocals } from '../http/authenticated.js';
import { type StepAfter, stepAfter } from '../http/locals.js';
import { SSE_PATH } from '../http/route-paths.js';
import { requestIdOf } from '../observability/request-log.js';
import type { ConnectionEnds, LiveConnection } from '../operations/live-connections.js';
import type { OperationPipeline } from '../operations/pipeline.js';
import { answerText } from '../operations/shared-executions.js';
import { answerOnce, type SubscribeRequest } from '../operations/subscriptions.js';
import { addressKey } from '../security/rate-limit.js';
import { isRecord } from '../shared/is-record.js';
import type { StreamedResponse, StreamedResponses } from './streamed-responses.js';

/** graphql-sse's keep-alive message: an empty comment, first when the stream opens (browsers wait for a byte), then every 12 s. */
const KEEP_ALIVE = ':\n\n';

/** A single-connection stream reserved (PUT) and not connected within this long is let go, so reservations cannot pile up. */
const RESERVATION_MS = 30_000;

/** What graphql-sse's handler knows of one HTTP request: its caller and id, the stream token it names, and its live connection. */
interface SseContext {
  caller: Caller;
  requestId: string;
  /** The stream the request names, scoped to its caller (see `streamToken`). */
  token: string;
  /** The live connection its operations belong to: its own (distinct connections), or the single-connection stream's it names. */
  connection: LiveConnection | undefined;
}

type Handler = SseHandler<IncomingMessage | undefined, SseContext>;
type SseBody = Exclude<Awaited<ReturnType<Handler>>[0], string | null>;

export interface ServerSentEventsDoor {
  /** Behind authentication: it serves the caller's streams. */
  handle: StepAfter<CallerLocals>;
  /** Lets go of the reservations' timers (their connections are completed by `LiveConnections.close`). */
  close(): void;
}

/**
 * The Server-Sent Events door: the `graphql-sse` protocol (graphql-sse's own handler, through its
 * hooks), in both its modes, on `/graphql/stream`. Distinct connections: each `POST` with
 * `Accept: text/event-stream` is one subscription and its stream. Single connection: `PUT`
 * reserves a stream (answering its token), a `GET` with the token connects it, each `POST` with
 * the token (`X-GraphQL-Event-Stream-Token`) adds an operation to it, `DELETE ?operationId=`
 * completes one. A token names a stream of its own caller only.
 *
 * Each stream is a live connection of the pipeline (`LiveConnections`): a distinct one from its
 * request on, a single-connection one from its reservation on (counted against the caller's and
 * the address's caps, and running nothing until its `GET` connects). The route before it admits
 * the caller (credentials, the admission sequence, the body's limit); `onSubscribe` hands each
 * operation to `pipeline.subscribe` and its connection adopts what it yields: a refusal or a
 * failure is its last `next` event, with errors, before `complete`. The door writes the handler's
 * stream itself, without waiting for the client, bounded (`StreamedResponses`).
 */
export function serverSentEvents(pipeline: OperationPipeline, streams: StreamedResponses, clock: Clock): ServerSentEventsDoor {
  const handler: Handler = createHandler<IncomingMessage | undefined, SseContext>({
    schema: pipeline.schema,
    authenticate: (request) => request.context.token,
    async onSubscribe(request, params) {
      const { caller, requestId, connection } = request.context;
      const answer = await pipeline.subscribe(withDocumentId(request, params), { caller, door: 'sse', requestId });
      const results =
        'refused' in answer
          ? answerOnce({ errors: answer.refused })
          : (connection?.adopt(answer, requestId, 'last answer') ?? (await answer.return(), answerOnce({})));
      // graphql-sse types results as graphql-js's; these are formatted already, and it writes each as JSON.
      return results as unknown as AsyncGenerator<ExecutionResult>;
    },
    // Each answer's JSON text is made once for the streams that share it (see `SharedPayloads`).
    onNext: (_context, request, result) => standIn(request.context.connection, result),
  });
  const reservations = new Reservations(handler, clock);
  return {
    handle: stepAfter(async (request, response, { caller }) => {
      const token = streamToken(request, caller);
      const context: SseContext = { caller, requestId: requestIdOf(request), token, connection: undefined };
      const sse = sseRequest(request, context);
      const reserved = reservations.get(token);
      const wantsStream = request.get('accept') === 'text/event-stream';
      const address = addressKey(request.ip);
      if (request.method === 'PUT') {
        const reservation = new Reservation(reservations, token, context);
        context.connection = pipeline.connections.connect('sse', address, reservation, { caller });
        reservation.reserved(context.connection);
        const [body, init] = await handler(sse);
        if (init.status === 201) reservations.add(reservation);
        else context.connection.end();
        return answer(response, body as string | null, init);
      }
      if (!wantsStream || reserved !== undefined) {
        // An operation added to a stream or completed (its connection the stream's), or the GET that connects a reservation.
        context.connection = reserved?.connection;
        const [body, init] = await handler(sse);
        if (body === null || typeof body === 'string') return answer(response, body, init);
        if (reserved === undefined) return void (await body.return());
        return reserved.connect(body, init, request, response, streams);
      }
      const door = new DistinctStreamEnds(request.socket);
      const connection = pipeline.connections.connect('sse', address, door, { caller, socket: request.socket });
      context.connection = connection;
      const [body, init] = await handler(sse);
      if (body === null || typeof body === 'string') {
        connection.end();
        return answer(response, body, init);
      }
      door.stream = streams.track(response, connection, endResponse);
      streams.detach(door.stream, writeStream(body, init, door.stream));
    }),
    close() {
      reservations.close();
    },
  };
}

/**
 * How the live connections end a stream of distinct connections: one small object for each,
 * rather than closures over the route's frame. The stream is made once the handler answered;
 * until then, cutting the connection cuts its socket.
 */
class DistinctStreamEnds implements ConnectionEnds {
  stream: StreamedResponse | undefined;

  constructor(private readonly socket: Socket) {}

  expired(connection: LiveConnection): void {
    connection.expireEach();
  }

  stopping(connection: LiveConnection): void {
    connection.completeEach();
  }

  cut(): void {
    if (this.stream) this.stream.cut();
    else this.socket.destroy();
  }
}

/** How an event stream ends cleanly: graphql-sse's last events are written by then. One function for every stream. */
function endResponse(response: ServerResponse): void {
  response.end();
}

/** Answers a request the handler answered in one piece. */
function answer(response: ExpressResponse, body: string | null, init: ResponseInit): void {
  response.writeHead(init.status, init.statusText, { ...init.headers, 'cache-control': 'no-store' });
  response.end(body ?? undefined);
}

/** graphql-sse's answer head. */
type ResponseInit = Awaited<ReturnType<Handler>>[1];

/**
 * Writes the handler's event stream as it comes, without waiting for the client, until it ends or
 * the connection does (then the stream's operations are completed through the handler).
 */
async function writeStream(body: SseBody, init: ResponseInit, stream: StreamedResponse): Promise<void> {
  const { response, connection } = stream;
  void connection.closed.then(() => body.return());
  if (!connection.isOpen) return;
  // graphql-sse says `no-cache`; every authenticated answer here is `no-store`.
  response.writeHead(init.status, init.statusText, { ...init.headers, connection: 'close', 'cache-control': 'no-store' });
  response.flushHeaders();
  try {
    for await (const message of body) {
      // graphql-sse's keep-alive comment (every 12 s), written as every door's keep-alive is.
      if (message === KEEP_ALIVE) stream.keepAlive(message);
      else if (!stream.write(withSharedPayload(message, connection))) break;
    }
  } finally {
    stream.finish();
    await body.return();
  }
}

/**
 * The answers a stream's `next` events carry, each by the number graphql-sse writes in its place.
 *
 * graphql-sse writes each event as `event: next\ndata: ${JSON.stringify(data)}\n\n`, `data`
 * being the answer (distinct connections) or `{id, payload: answer}` (a single connection): a
 * serialisation per stream of an answer many streams share, with no hook over that text. Its
 * `onNext` hook may replace the answer, though: with a number (`standIn`), which serialises as
 * its digits, and which no answer can be (an answer is an object). The door writes the stream's
 * events itself, and puts the answer's shared text (`answerText`) back in the number's place
 * (`withSharedPayload`): the frame is byte for byte graphql-sse's own.
 */
class SharedPayloads {
  private readonly byNumber = new Map<number, object>();
  private numbered = 0;

  hold(answer: object): number {
    this.numbered += 1;
    this.byNumber.set(this.numbered, answer);
    return this.numbered;
  }

  take(number: number): object | undefined {
    const answer = this.byNumber.get(number);
    this.byNumber.delete(number);
    return answer;
  }
}

/** The answers each stream's events wait to carry, for as long as its connection lives. */
const sharedPayloads = new WeakMap<LiveConnection, SharedPayloads>();

/** What graphql-sse's `onNext` sends in an answer's place: a number that stands for it in its stream (see `SharedPayloads`). */
function standIn(connection: LiveConnection | undefined, answer: unknown): ExecutionResult | undefined {
  if (connection === undefined || typeof answer !== 'object' || answer === null) return undefined;
  let payloads = sharedPayloads.get(connection);
  if (payloads === undefined) sharedPayloads.set(connection, (payloads = new SharedPayloads()));
  // graphql-sse takes any value as the replacement result, and writes it as JSON.
  return payloads.hold(answer) as unknown as ExecutionResult;
}

/** An event of distinct connections with a stand-in for its answer: `event: next\ndata: 7\n\n`. */
const DISTINCT_STAND_IN = /^event: next\ndata: (\d+)\n\n$/;
/** An event of a single connection with a stand-in for its answer: `event: next\ndata: {"id":…,"payload":7}\n\n`. */
const SINGLE_STAND_IN = /^(event: next\ndata: \{"id":.*,"payload":)(\d+)\}\n\n$/s;

/** The event graphql-sse made, with the answer's shared text in place of its stand-in. */
function withSharedPayload(message: string, connection: LiveConnection): string {
  const payloads = sharedPayloads.get(connection);
  if (payloads === undefined || !message.startsWith('event: next\n')) return message;
  const distinct = DISTINCT_STAND_IN.exec(message);
  if (distinct !== null) {
    const answer = payloads.take(Number(distinct[1]));
    return answer === undefined ? message : nextEvent(answer);
  }
  const single = SINGLE_STAND_IN.exec(message);
  const answer = single === null ? undefined : payloads.take(Number(single[2]));
  return answer === undefined ? message : `${single![1]}${answerText(answer)}}\n\n`;
}

/** The event of an answer over distinct connections: one text for every stream that shares the answer. */
const nextEvents = new WeakMap<object, string>();
function nextEvent(answer: object): string {
  let event = nextEvents.get(answer);
  if (event === undefined) nextEvents.set(answer, (event = `event: next\ndata: ${answerText(answer)}\n\n`));
  return event;
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
function streamToken(request: ExpressRequest, caller: Caller): string {
  const prefix = `${caller.userId}.`;
  const given = request.get(TOKEN_HEADER_KEY) ?? new URL(request.url, 'http://localhost').searchParams.get(TOKEN_QUERY_KEY);
  if (!given) return `${prefix}${randomUUID()}`;
  return given.startsWith(prefix) ? given : `${prefix}${given}`;
}

/** The single-connection streams of the door, reserved or connected, by token. */
class Reservations {
  private readonly byToken = new Map<string, Reservation>();

  constructor(
    readonly handler: Handler,
    readonly clock: Clock,
  ) {}

  get(token: string): Reservation | undefined {
    return this.byToken.get(token);
  }

  add(reservation: Reservation): void {
    this.byToken.set(reservation.token, reservation);
    reservation.awaitConnection();
  }

  forget(reservation: Reservation): void {
    if (this.byToken.get(reservation.token) === reservation) this.byToken.delete(reservation.token);
  }

  close(): void {
    for (const reservation of this.byToken.values()) reservation.stopWaiting();
  }
}

/**
 * One single-connection stream, from its reservation (PUT) to its end: a live connection from
 * the start, whose subscriptions run nothing until its `GET` connects it (so nothing is held for
 * a client that never reads). One never connected within `RESERVATION_MS` is let go, by
 * connecting it and ending it at once through the handler; its subscriptions end with it.
 */
class Reservation implements ConnectionEnds {
  connection!: LiveConnection;
  private stream: StreamedResponse | undefined;
  private body: SseBody | undefined;
  private cancelWait: (() => void) | undefined;

  constructor(
    private readonly reservations: Reservations,
    readonly token: string,
    private readonly context: SseContext,
  ) {}

  reserved(connection: LiveConnection): void {
    this.connection = connection;
    connection.hold();
    void connection.closed.then(() => this.ended());
  }

  awaitConnection(): void {
    this.cancelWait = this.reservations.clock.schedule(() => this.connection.end(), RESERVATION_MS);
  }

  stopWaiting(): void {
    this.cancelWait?.();
    this.cancelWait = undefined;
  }

  /** The `GET` connected it: its subscriptions run from now on, written to `response`, until the stream or the socket ends. */
  async connect(body: SseBody, init: ResponseInit, request: ExpressRequest, response: ExpressResponse, streams: StreamedResponses) {
    this.stopWaiting();
    this.body = body;
    if (!this.connection.isOpen) return void (await body.return());
    this.connection.watch(request.socket);
    this.stream = streams.track(response, this.connection, endResponse);
    this.connection.take();
    streams.detach(this.stream, writeStream(body, init, this.stream));
  }

  expired(connection: LiveConnection): void {
    connection.expireEach();
    this.endAfterLastWords();
  }

  stopping(connection: LiveConnection): void {
    connection.completeEach();
    this.endAfterLastWords();
  }

  cut(): void {
    if (this.stream) this.stream.cut();
    else this.connection.end();
  }

  /** Each operation's last event is queued once its loop sees the end (promise jobs, no I/O); then the stream ends. */
  private endAfterLastWords(): void {
    setImmediate(() => {
      if (this.stream) this.stream.finish();
      else this.connection.end();
    });
  }

  /** Its connection ended: the handler lets go of its stream (and of its operations), the token names nothing any more. */
  private ended(): void {
    this.stopWaiting();
    this.reservations.forget(this);
    if (this.body !== undefined) return void this.body.return();
    void this.letGo();
  }

  private async letGo(): Promise<void> {
    const headers = { get: (name: string) => (name === 'accept' ? 'text/event-stream' : name === TOKEN_HEADER_KEY ? this.token : null) };
    const [body] = await this.reservations.handler({
      method: 'GET',
      url: SSE_PATH,
      headers,
      body: null,
      raw: undefined,
      context: this.context,
    });
    if (body !== null && typeof body !== 'string') await body.return();
  }
}
