import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type Server, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';

import {
  createSourceEventStream,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  getOperationAST,
  GraphQLError,
  Kind,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { CloseCode, type Context, type SubscribePayload } from 'graphql-ws';
import { type Extra, useServer } from 'graphql-ws/use/ws';
import { type Server as WebSocketServerOf, type ServerOptions, type WebSocket, WebSocketServer } from 'ws';

import type { Authenticator, Caller } from '../auth/authenticator.js';
import type { Clock } from '../clock.js';
import type { CreateContext, RequestContext } from '../context.js';
import { badRequest, failureOf, graphqlAnswer, tooManyWebsockets, withFailureKinds } from '../errors.js';
import { routeUpgrades } from '../http/upgrades.js';
import { BODY_LIMIT_BYTES } from '../limits.js';
import type { Logger } from '../logger.js';
import type { Observation } from '../operations/observer.js';
import type { OperationPipeline } from '../operations/pipeline.js';
import { checkOrigin } from '../security/cross-origin.js';
import { addressKey, type RateLimits } from '../security/rate-limit.js';
import type { DocumentReference } from '../security/trusted-documents.js';
import { type BoundedWebSocket, boundedWebSocketClass } from './bounded-websocket.js';
import { CallerSubscriptions, SocketOperations } from './socket-operations.js';
import type { SubscriptionMetrics } from './subscription-metrics.js';

/** The path subscriptions are served on: the GraphQL endpoint itself. */
const GRAPHQL_PATH = '/graphql';
/** How often each socket is pinged; a socket that does not answer within as long again is dropped. */
const KEEP_ALIVE_MS = 12_000;
/** How long a socket the server closes may take to answer with its close frame before it is cut (ws waits 30 s). */
const CLOSE_GRACE_MS = 2_000;
/** A close code of the WebSocket standard: the server is going away. */
const GOING_AWAY = 1001;
/** A close code of the WebSocket standard: try again later (clients reconnect). */
const TRY_AGAIN_LATER = 1013;
/** The longest reason a close frame carries, in bytes. */
const CLOSE_REASON_BYTES = 123;

export interface SubscriptionCaps {
  /** Subscriptions one caller may have running at once, over all their sockets to this process. */
  subscriptionsPerCaller: number;
  /** Sockets one client address may hold open at once to this process. */
  websocketsPerAddress: number;
  /** What the server may hold unsent for one socket, in bytes: past it, the socket is dropped. */
  bufferedBytesPerWebsocket: number;
}

export interface SubscriptionServerOptions {
  /** The server `/graphql` is served on: sockets upgrade from its requests. */
  httpServer: Server;
  /** Checks, runs, observes and formats each subscription and each of its events, as every door's operations. */
  pipeline: OperationPipeline;
  authenticator: Authenticator;
  createContext: CreateContext;
  rateLimits: RateLimits;
  /** Messages a second one socket may send, every kind counted, with bursts (`RATE_LIMIT`; 0: no limit). */
  messagesPerSecond: number;
  /**
   * The text of the document a subscribe message names, by its text or by a trusted document's id
   * (the trusted-documents rule, the same as over HTTP); throws a failure to refuse it.
   */
  documentOf(reference: DocumentReference): string | undefined;
  caps: SubscriptionCaps;
  /** The client's address as the HTTP layer sees it (`TRUST_PROXY`). */
  clientAddress(request: IncomingMessage): string | undefined;
  /** Browser origins allowed besides the server's own (`CORS_ORIGINS`). */
  corsOrigins: readonly string[];
  production: boolean;
  clock: Clock;
  metrics: SubscriptionMetrics;
  logger: Logger;
}

export interface SubscriptionServer {
  /** Closes every socket with 1001 (going away) and refuses new ones; resolves once they are closed (bounded). */
  close(): Promise<void>;
}

/** What this server keeps about one socket. */
interface SocketState {
  caller?: Caller;
  cancelExpiry?: () => void;
  /** Its subscribe messages, from their arrival until their subscriptions end. */
  operations: SocketOperations;
}

/** What the parts of the server share: its options, its sockets, and what it counts across them. */
interface Door {
  options: SubscriptionServerOptions;
  websockets: WebSocketServerOf<ReturnType<typeof boundedWebSocketClass>>;
  states: WeakMap<WebSocket, SocketState>;
  socketsByAddress: Map<string, number>;
  callers: CallerSubscriptions;
  /** The request id of each refusal, by the errors graphql-ws hands back to `onError`: it names the refusal in the log and the answer. */
  refusals: WeakMap<readonly GraphQLError[], string>;
  closing: boolean;
}

type SocketContext = Context<Record<string, unknown>, Extra>;
/** graphql-ws's options for `ws`: its hooks. */
type ProtocolOptions = Parameters<typeof useServer<Record<string, unknown>>>[0];

/**
 * GraphQL subscriptions over WebSocket (graphql-ws, subprotocol `graphql-transport-ws`) on the
 * same port and path as `/graphql`. Each socket authenticates once, in `connection_init`, with
 * the same credentials as HTTP (refused: closed with 4403 before any operation), and is closed
 * with 4403 when its access token expires. Each subscribe message is counted by the per-caller
 * rate limit and checked by the operation pipeline like an HTTP request: the trusted-documents
 * rule, the document stage (the token limit, validation with the limits), and the cost. Only
 * subscriptions run here; queries and mutations go over HTTP. Each event runs through the
 * pipeline's execute stage with a context of its own (fresh services and DataLoaders), so it
 * reads what is stored now. What a socket may cost is bounded (see `boundedWebSocketClass`),
 * and its subscriptions end with it.
 */
export function startSubscriptionServer(options: SubscriptionServerOptions): SubscriptionServer {
  const limits = { maxBufferedBytes: options.caps.bufferedBytesPerWebsocket, messagesPerSecond: options.messagesPerSecond };
  const serverOptions: ServerOptions<ReturnType<typeof boundedWebSocketClass>> & { closeTimeout: number } = {
    noServer: true,
    maxPayload: BODY_LIMIT_BYTES,
    WebSocket: boundedWebSocketClass(limits, options.clock),
    // ws 8.23's option (not yet in its type definitions): a socket that does not answer a close frame is cut.
    closeTimeout: CLOSE_GRACE_MS,
  };
  const door: Door = {
    options,
    websockets: new WebSocketServer<ReturnType<typeof boundedWebSocketClass>>(serverOptions),
    states: new WeakMap(),
    socketsByAddress: new Map(),
    callers: new CallerSubscriptions(options.caps.subscriptionsPerCaller),
    refusals: new WeakMap(),
    closing: false,
  };
  routeUpgrades(options.httpServer, isGraphqlWebSocket, (request, socket, head) => void acceptSocket(door, request, socket, head));
  useServer<Record<string, unknown>>(protocolOptions(door), door.websockets, KEEP_ALIVE_MS);
  return {
    async close() {
      door.closing = true;
      // Resolves once the last socket has closed: each within CLOSE_GRACE_MS of its close frame.
      const closed = new Promise<void>((resolve) => door.websockets.close(() => resolve()));
      for (const websocket of door.websockets.clients) websocket.close(GOING_AWAY, 'server stopping');
      await closed;
    },
  };
}

/** A WebSocket opening on /graphql: the one upgrade this server takes; any other request is served over HTTP. */
function isGraphqlWebSocket(request: IncomingMessage): boolean {
  const url = request.url ?? '/';
  return (
    request.method === 'GET' &&
    request.headers.upgrade?.toLowerCase() === 'websocket' &&
    URL.canParse(url, 'http://localhost') &&
    new URL(url, 'http://localhost').pathname === GRAPHQL_PATH
  );
}

/** Opens a socket once its origin, its address's rate and its address's count of sockets allow it. */
async function acceptSocket(door: Door, request: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
  const { options, websockets } = door;
  // Counted as the rate limits count addresses: an IPv6 client by its /64, inside which it can rotate freely.
  const address = addressKey(options.clientAddress(request));
  try {
    checkOrigin(request, options.corsOrigins);
    await options.rateLimits.countAddress(address);
    const { websocketsPerAddress } = options.caps;
    if ((door.socketsByAddress.get(address) ?? 0) >= websocketsPerAddress) throw tooManyWebsockets(websocketsPerAddress);
  } catch (error) {
    refuseUpgrade(socket, failureOf(error));
    return;
  }
  websockets.handleUpgrade(request, socket, head, (websocket) => {
    track(door, websocket, address);
    websockets.emit('connection', websocket, request);
    // A client's protocol error (a message over the size limit, a bad frame) closes its socket with
    // the right code already (1009, 1002); graphql-ws would also print it to the console as a server fault.
    websocket
      .removeAllListeners('error')
      .on('error', (error) => options.logger.debug({ err: error, address }, 'WebSocket closed for a protocol error'));
    if (door.closing) websocket.close(GOING_AWAY, 'server stopping');
  });
}

/**
 * Counts an open socket (per address, and in the gauge) until it closes. Its close, whatever
 * its cause, ends everything it holds at once, before graphql-ws hears of it: its operations at
 * any stage (their per-caller count, gauge and change-feed listeners), and its expiry timer.
 */
function track(door: Door, websocket: BoundedWebSocket, address: string): void {
  const { metrics, logger } = door.options;
  const state: SocketState = { operations: new SocketOperations(door.callers, metrics) };
  door.states.set(websocket, state);
  door.socketsByAddress.set(address, (door.socketsByAddress.get(address) ?? 0) + 1);
  metrics.websocketOpened();
  websocket.once('close', (code, reason) => {
    state.cancelExpiry?.();
    state.operations.endAll();
    const left = (door.socketsByAddress.get(address) ?? 1) - 1;
    if (left === 0) door.socketsByAddress.delete(address);
    else door.socketsByAddress.set(address, left);
    metrics.websocketClosed();
    if (websocket.endedFor === undefined) logger.debug({ address, code, reason: reason.toString() }, 'WebSocket closed');
    else logger.info({ address, code, endedFor: websocket.endedFor }, `WebSocket ended by the server: ${websocket.endedFor}`);
  });
}

/** graphql-ws's hooks: the socket's credential, then each subscribe message's checks and lifecycle. */
function protocolOptions(door: Door): ProtocolOptions {
  const { options } = door;
  const stateOf = (context: SocketContext): SocketState => door.states.get(context.extra.socket)!;
  const check = subscribeChecks(options);
  const { format } = options.pipeline;
  return {
    schema: options.pipeline.schema,
    subscribe: subscribeEach(options),
    isProd: options.production,
    onConnect: (context) => authenticate(options, stateOf(context), context),
    onSubscribe: (context, id, payload) => startOperation(door, stateOf(context), check, context, id, payload),
    onOperation(context, _id, payload, _args, result) {
      // Its event stream is open: from now on it gets every change (what /readyz and the gauge count).
      const operation = stateOf(context).operations.of(payload);
      if (Symbol.asyncIterator in (result as object)) operation?.run(result as AsyncIterator<unknown>);
    },
    onNext(context, _id, payload, args, result) {
      const field = stateOf(context).operations.of(payload)?.field;
      if (field !== undefined) options.metrics.eventSent(field);
      if (result.errors === undefined) return undefined;
      return {
        ...result,
        errors: format.render(result.errors as readonly GraphQLError[], (args.contextValue as RequestContext).requestId),
      };
    },
    onError: (_context, id, _payload, errors) => format.render(errors, door.refusals.get(errors) ?? id),
    onComplete: (context, _id, payload) => stateOf(context).operations.of(payload)?.end(),
  };
}

/** `connection_init`: the socket's caller, and its close with 4403 when their access token expires. */
async function authenticate(options: SubscriptionServerOptions, state: SocketState, context: SocketContext): Promise<boolean> {
  const { authenticator, clock, logger } = options;
  const socket = context.extra.socket;
  const authorization = context.connectionParams?.Authorization ?? context.connectionParams?.authorization;
  let caller: Caller | null;
  try {
    caller = typeof authorization === 'string' ? await authenticator.authenticate(authorization) : null;
  } catch (error) {
    logger.warn({ err: error }, 'WebSocket refused: its credential could not be checked');
    socket.close(TRY_AGAIN_LATER, 'credentials cannot be checked right now');
    return false;
  }
  // A socket that closed meanwhile gets nothing that would outlive it (the expiry timer).
  if (caller === null || socket.readyState !== socket.OPEN) return false;
  state.caller = caller;
  if (caller.acceptedUntil !== undefined) {
    state.cancelExpiry = clock.schedule(
      () => socket.close(CloseCode.Forbidden, 'Forbidden: credential expired'),
      caller.acceptedUntil - clock.now(),
    );
  }
  return true;
}

/**
 * A subscribe message: checked, then counted against its caller's cap, unless the client
 * completed it or the socket closed meanwhile (then it starts nothing). Its id is its own until
 * it ends: a subscribe that reuses it sooner closes the socket as a duplicate id does (4409).
 */
async function startOperation(
  door: Door,
  state: SocketState,
  check: ReturnType<typeof subscribeChecks>,
  context: SocketContext,
  id: string,
  payload: SubscribePayload,
): Promise<ExecutionArgs | readonly GraphQLError[]> {
  const operation = state.operations.begin(id, payload);
  if (operation === undefined) {
    // graphql-ws's own words for a duplicate id, short enough for a close frame. The error is never sent: the socket is closing.
    const reason = `Subscriber for ${id} already exists`;
    context.extra.socket.close(
      CloseCode.SubscriberAlreadyExists,
      Buffer.byteLength(reason) <= CLOSE_REASON_BYTES ? reason : 'Subscriber already exists',
    );
    return [badRequest(reason)];
  }
  const { pipeline, createContext } = door.options;
  const requestId = randomUUID();
  const observation = pipeline.observer.start('websocket', requestId);
  const refuse = (errors: readonly GraphQLError[]) => {
    operation.end();
    observation.finished(errors);
    door.refusals.set(errors, requestId);
    return errors;
  };
  try {
    const checked = await check(state.caller!, payload, observation);
    if (!('document' in checked)) return refuse(checked);
    // Completed by the client (graphql-ws no longer holds its id, and sends nothing for it) or closed while it was checked.
    if (operation.hasEnded || !(id in context.subscriptions)) return refuse([badRequest('completed before it started')]);
    operation.reserve(state.caller!.userId, checked.field);
    return {
      schema: pipeline.schema,
      document: checked.document,
      operationName: payload.operationName,
      variableValues: payload.variables,
      contextValue: createContext(state.caller!, requestId, observation),
    };
  } catch (error) {
    return refuse([error instanceof GraphQLError ? error : failureOf(error)]);
  }
}

/**
 * The checks of a subscribe message, as over HTTP: the caller's rate limit, the trusted-documents
 * rule, the pipeline's document and limit stages, one subscription operation. Answers its document
 * and root field, or the errors refusing it; throws a failure to refuse it otherwise.
 */
function subscribeChecks(options: SubscriptionServerOptions) {
  const { pipeline, rateLimits } = options;
  return async (
    caller: Caller,
    payload: SubscribePayload,
    observation: Observation,
  ): Promise<{ document: DocumentNode; field: string } | readonly GraphQLError[]> => {
    await rateLimits.countCaller(caller.userId);
    const text = options.documentOf(payload);
    if (text === undefined) throw badRequest('a subscribe message must carry a GraphQL document');
    const checked = pipeline.check({ text, operationName: payload.operationName, variables: payload.variables }, observation);
    if ('errors' in checked) return checked.errors;
    const { document, operation } = checked;
    if (operation.operation !== 'subscription') {
      throw badRequest('only subscriptions are served over WebSocket; send queries and mutations to POST /graphql');
    }
    return { document, field: rootFieldOf(operation, document) };
  };
}

/**
 * Opens a subscription's event stream, then runs each event through the pipeline's execute
 * stage with a context (and an observation) of its own, so that DataLoaders never answer from an
 * earlier event. The subscribe message's observation ends once its stream is open, or refused.
 */
function subscribeEach({ pipeline, createContext }: SubscriptionServerOptions) {
  return async function subscribe(args: ExecutionArgs): Promise<AsyncIterableIterator<ExecutionResult> | ExecutionResult> {
    const { caller, requestId, observation } = args.contextValue as RequestContext;
    const source = await observation.within(() => createSourceEventStream(args));
    if (!(Symbol.asyncIterator in source)) {
      const refused = withFailureKinds(source);
      observation.finished(refused.errors);
      return refused;
    }
    observation.finished(undefined);
    const { document } = args;
    const operation = getOperationAST(document, args.operationName)!;
    const variables = args.variableValues ?? undefined;
    const events = source[Symbol.asyncIterator]();
    const results: AsyncIterableIterator<ExecutionResult> = {
      async next() {
        let event: IteratorResult<unknown>;
        try {
          event = await events.next();
        } catch (error) {
          throw failureOf(error);
        }
        if (event.done) return { value: undefined, done: true };
        const context = createContext(caller, requestId, pipeline.observer.start('websocket', requestId));
        context.observation.resolved(operation);
        const result = await pipeline.execution.execute({ document, operation, context, variables, rootValue: event.value });
        context.observation.finished(result.errors);
        return { value: result, done: false };
      },
      async return() {
        await events.return?.();
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]: () => results,
    };
    return results;
  };
}

/** The one field a (valid) subscription selects at its root, through fragments if need be. */
function rootFieldOf(operation: OperationDefinitionNode, document: DocumentNode): string {
  const fragments = new Map(
    document.definitions.flatMap((definition) =>
      definition.kind === Kind.FRAGMENT_DEFINITION ? [[definition.name.value, definition] as const] : [],
    ),
  );
  const find = (selectionSet: SelectionSetNode): string | undefined => {
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) return selection.name.value;
      const inner = selection.kind === Kind.INLINE_FRAGMENT ? selection.selectionSet : fragments.get(selection.name.value)?.selectionSet;
      const found = inner && find(inner);
      if (found) return found;
    }
    return undefined;
  };
  return find(operation.selectionSet) ?? 'unknown';
}

/** Answers an upgrade request it will not accept as `/graphql` answers over HTTP, then closes the connection. */
function refuseUpgrade(socket: Duplex, failure: ReturnType<typeof failureOf>): void {
  const { status, headers, body } = graphqlAnswer(failure, randomUUID());
  const text = JSON.stringify(body);
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(text)}`,
    'Connection: close',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  socket.end(`${lines.join('\r\n')}\r\n\r\n${text}`);
}
