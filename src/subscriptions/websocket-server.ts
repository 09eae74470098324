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
import { CloseCode, type Context, handleProtocols, makeServer, type Server as ProtocolServer, type SubscribePayload } from 'graphql-ws';
import { type Server as WebSocketServerOf, type ServerOptions, WebSocketServer } from 'ws';

import type { Authenticator, Caller } from '../auth/authenticator.js';
import type { Clock } from '../clock.js';
import type { CreateContext } from '../context.js';
import { badRequest, failureOf, graphqlAnswer, tooManyWebsockets, withFailureKinds } from '../errors.js';
import { GRAPHQL_PATH, routesTo } from '../http/route-paths.js';
import { routeUpgrades } from '../http/upgrades.js';
import { BODY_LIMIT_BYTES, WEBSOCKET_MESSAGE_ASSEMBLY } from '../limits.js';
import type { Logger } from '../logger.js';
import type { Observation } from '../operations/observer.js';
import type { OperationPipeline } from '../operations/pipeline.js';
import { checkOrigin } from '../security/cross-origin.js';
import { addressKey, type RateLimits } from '../security/rate-limit.js';
import type { DocumentReference } from '../security/trusted-documents.js';
import { type BoundedWebSocket, boundedWebSocketClass } from './bounded-websocket.js';
import { CredentialExpiries } from './credential-expiries.js';
import { openProtocol } from './protocol-socket.js';
import { SharedExecutions } from './shared-executions.js';
import { CallerSubscriptions, SocketOperations } from './socket-operations.js';
import type { SubscriptionMetrics } from './subscription-metrics.js';

/** Subscriptions are served on the GraphQL endpoint itself: on exactly the requests HTTP routes there. */
const routedToGraphql = routesTo(GRAPHQL_PATH);
/** How often every socket is pinged; a socket that does not answer before the next beat is dropped. */
const KEEP_ALIVE_MS = 12_000;
/** How long a socket may wait before its `connection_init` (graphql-ws's own default): past it, it is closed with 4408. */
const CONNECTION_INIT_WAIT_MS = 3_000;
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
  clock: Clock;
  metrics: SubscriptionMetrics;
  logger: Logger;
}

export interface SubscriptionServer {
  /** Closes every socket with 1001 (going away) and refuses new ones; resolves once they are closed (bounded). */
  close(): Promise<void>;
}

/** What this server keeps about one socket: the `extra` of its graphql-ws context. */
interface SocketState {
  socket: BoundedWebSocket;
  caller?: Caller;
  /** Until its `connection_init` arrives: the timer that closes it if none does. */
  cancelInitWait?: () => void;
  /** Its subscribe messages, from their arrival until their subscriptions end. */
  operations: SocketOperations;
}

/** What the parts of the server share: its options, its sockets, and what it counts across them. */
interface Door {
  options: SubscriptionServerOptions;
  websockets: WebSocketServerOf<ReturnType<typeof boundedWebSocketClass>>;
  socketsByAddress: Map<string, number>;
  callers: CallerSubscriptions;
  expiries: CredentialExpiries<BoundedWebSocket>;
  /** The request id of each refusal, by the errors graphql-ws hands back to `onError`: it names the refusal in the log and the answer. */
  refusals: WeakMap<readonly GraphQLError[], string>;
  closing: boolean;
}

/**
 * What graphql-ws holds as a subscription's `contextValue` for as long as it runs: what its events
 * need, not a context. `subscribe` makes the context that opens its stream, and one per event.
 */
interface SubscriptionRequest {
  readonly caller: Caller;
  /** The subscription's own id: in its log lines and its internal errors. */
  readonly requestId: string;
  /** The subscribe message's observation, until its stream is open or refused. */
  observation: Observation | undefined;
}

type SocketContext = Context<Record<string, unknown>, SocketState>;
/** graphql-ws's options: its hooks. */
type ProtocolOptions = Parameters<typeof makeServer<Record<string, unknown>, SocketState>>[0];

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
    // ws's defaults let a message in 1-byte fragments, or a frame read a byte at a time, hold megabytes.
    maxFragments: WEBSOCKET_MESSAGE_ASSEMBLY.fragments,
    maxBufferedChunks: WEBSOCKET_MESSAGE_ASSEMBLY.reads,
    WebSocket: boundedWebSocketClass(limits, options.clock),
    handleProtocols,
    // ws 8.23's option (not yet in its type definitions): a socket that does not answer a close frame is cut.
    closeTimeout: CLOSE_GRACE_MS,
  };
  const door: Door = {
    options,
    websockets: new WebSocketServer<ReturnType<typeof boundedWebSocketClass>>(serverOptions),
    socketsByAddress: new Map(),
    callers: new CallerSubscriptions(options.caps.subscriptionsPerCaller),
    expiries: new CredentialExpiries(options.clock),
    refusals: new WeakMap(),
    closing: false,
  };
  const protocol = makeServer(protocolOptions(door));
  routeUpgrades(
    options.httpServer,
    isGraphqlWebSocket,
    (request, socket, head) => void acceptSocket(door, protocol, request, socket, head),
  );
  const keepAlive = setInterval(() => {
    for (const websocket of door.websockets.clients) websocket.keepAlive();
  }, KEEP_ALIVE_MS).unref();
  return {
    async close() {
      door.closing = true;
      clearInterval(keepAlive);
      // Resolves once the last socket has closed: each within CLOSE_GRACE_MS of its close frame.
      const closed = new Promise<void>((resolve) => door.websockets.close(() => resolve()));
      for (const websocket of door.websockets.clients) websocket.close(GOING_AWAY, 'server stopping');
      await closed;
    },
  };
}

/** A WebSocket opening on /graphql: the one upgrade this server takes; any other request is served over HTTP. */
function isGraphqlWebSocket(request: IncomingMessage): boolean {
  return request.method === 'GET' && request.headers.upgrade?.toLowerCase() === 'websocket' && routedToGraphql(request);
}

/** Opens a socket once its origin, its address's rate and its address's count of sockets allow it, and hands it to graphql-ws. */
async function acceptSocket(
  door: Door,
  protocol: ProtocolServer<SocketState>,
  request: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): Promise<void> {
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
    const state = track(door, websocket, address);
    // A client's protocol error (a message over the size limit, a bad frame) closes its socket with the right code already (1009, 1002).
    websocket.on('error', (error) => options.logger.debug({ err: error, address }, 'WebSocket closed for a protocol error'));
    openProtocol(protocol, websocket, state, options.logger);
    if (door.closing) websocket.close(GOING_AWAY, 'server stopping');
  });
}

/**
 * Counts an open socket (per address, and in the gauge) until it closes. Its close, whatever
 * its cause, ends everything it holds at once, before graphql-ws hears of it: its operations at
 * any stage (their per-caller count, gauge and change-feed listeners), its wait for
 * `connection_init` and its place among the credential expiries.
 */
function track(door: Door, websocket: BoundedWebSocket, address: string): SocketState {
  const { metrics, logger, clock } = door.options;
  const state: SocketState = {
    socket: websocket,
    operations: new SocketOperations(door.callers, metrics),
    cancelInitWait: clock.schedule(
      () => websocket.close(CloseCode.ConnectionInitialisationTimeout, 'Connection initialisation timeout'),
      CONNECTION_INIT_WAIT_MS,
    ),
  };
  door.socketsByAddress.set(address, (door.socketsByAddress.get(address) ?? 0) + 1);
  metrics.websocketOpened();
  websocket.once('close', (code, reason) => {
    state.cancelInitWait?.();
    if (state.caller?.acceptedUntil !== undefined) door.expiries.forget(websocket, state.caller.acceptedUntil);
    state.operations.endAll();
    const left = (door.socketsByAddress.get(address) ?? 1) - 1;
    if (left === 0) door.socketsByAddress.delete(address);
    else door.socketsByAddress.set(address, left);
    metrics.websocketClosed();
    if (websocket.endedFor === undefined) logger.debug({ address, code, reason: reason.toString() }, 'WebSocket closed');
    else logger.info({ address, code, endedFor: websocket.endedFor }, `WebSocket ended by the server: ${websocket.endedFor}`);
  });
  return state;
}

/** graphql-ws's hooks: the socket's credential, then each subscribe message's checks and lifecycle. */
function protocolOptions(door: Door): ProtocolOptions {
  const { options } = door;
  const stateOf = (context: SocketContext): SocketState => context.extra;
  const check = subscribeChecks(options);
  const { format } = options.pipeline;
  // An internal error names the request whose log line tells of it: for an event's result, the subscription that ran it.
  const ranBy = new WeakMap<ExecutionResult, string>();
  return {
    schema: options.pipeline.schema,
    // The wait for `connection_init` is the socket's own timer (`track`), let go once it arrives.
    connectionInitWaitTimeout: 0,
    subscribe: subscribeEach(options, ranBy),
    onConnect: (context) => authenticate(door, stateOf(context), context),
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
      const requestId = ranBy.get(result) ?? (args.contextValue as SubscriptionRequest).requestId;
      return { ...result, errors: format.render(result.errors as readonly GraphQLError[], requestId) };
    },
    onError: (_context, id, _payload, errors) => format.render(errors, door.refusals.get(errors) ?? id),
    onComplete: (context, _id, payload) => stateOf(context).operations.of(payload)?.end(),
  };
}

/** `connection_init`: the socket's caller, and its close with 4403 when their access token expires. */
async function authenticate(door: Door, state: SocketState, context: SocketContext): Promise<boolean> {
  const { authenticator, logger } = door.options;
  const { socket } = state;
  state.cancelInitWait?.();
  state.cancelInitWait = undefined;
  const authorization = context.connectionParams?.Authorization ?? context.connectionParams?.authorization;
  let caller: Caller | null;
  try {
    caller = typeof authorization === 'string' ? await authenticator.authenticate(authorization) : null;
  } catch (error) {
    logger.warn({ err: error }, 'WebSocket refused: its credential could not be checked');
    socket.close(TRY_AGAIN_LATER, 'credentials cannot be checked right now');
    return false;
  }
  // A socket that closed meanwhile gets nothing that would outlive it (its place among the expiries).
  if (caller === null || socket.readyState !== socket.OPEN) return false;
  state.caller = caller;
  if (caller.acceptedUntil !== undefined) door.expiries.add(socket, caller.acceptedUntil);
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
  const { pipeline } = door.options;
  const requestId = flatRequestId();
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
    const request: SubscriptionRequest = { caller: state.caller!, requestId, observation };
    return {
      schema: pipeline.schema,
      document: checked.document,
      operationName: payload.operationName,
      variableValues: payload.variables,
      contextValue: request,
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
 * earlier event. The subscriptions that get one event object alike share that one execution (see
 * `SharedExecutions`): it is observed once, as one operation, its unexpected errors logged once
 * with the request id of the subscription that ran it, which `ranBy` keeps for every answer to
 * name. The subscribe message's observation ends once its stream is open, or refused.
 */
function subscribeEach({ pipeline, createContext }: SubscriptionServerOptions, ranBy: WeakMap<ExecutionResult, string>) {
  const shared = new SharedExecutions(pipeline.schema);
  const execute = async ({ document, operation, variables, caller, requestId }: EventRun, rootValue: unknown): Promise<ExecutionResult> => {
    const context = createContext(caller, requestId, pipeline.observer.start('websocket', requestId));
    context.observation.resolved(operation);
    const result = await pipeline.execution.execute({ document, operation, context, variables, rootValue });
    context.observation.finished(result.errors);
    ranBy.set(result, requestId);
    return result;
  };
  const runEvent: RunEvent = (run, event) => shared.run(event, run.sharing, () => execute(run, event));
  return async function subscribe(args: ExecutionArgs): Promise<AsyncIterableIterator<ExecutionResult> | ExecutionResult> {
    const request = args.contextValue as SubscriptionRequest;
    const { caller, requestId } = request;
    const observation = request.observation!;
    request.observation = undefined;
    const contextValue = createContext(caller, requestId, observation);
    const source = await observation.within(() => createSourceEventStream({ ...args, contextValue }));
    if (!(Symbol.asyncIterator in source)) {
      const refused = withFailureKinds(source);
      observation.finished(refused.errors);
      return refused;
    }
    observation.finished(undefined);
    const { document } = args;
    const operation = getOperationAST(document, args.operationName)!;
    const variables = args.variableValues ?? undefined;
    const run: EventRun = { document, operation, variables, caller, requestId, sharing: shared.keyOf(operation, variables, caller.userId) };
    return new SubscriptionResults(source[Symbol.asyncIterator](), run, runEvent);
  };
}

/** What running a subscription's events takes. */
interface EventRun {
  document: DocumentNode;
  operation: OperationDefinitionNode;
  variables: Record<string, unknown> | undefined;
  caller: Caller;
  requestId: string;
  /** Its key among the executions subscriptions share (see `SharedExecutions`). */
  sharing: string | undefined;
}

type RunEvent = (run: EventRun, event: unknown) => Promise<ExecutionResult>;

/**
 * A subscription's results: each event of its stream, run. A class, so that each of thousands of
 * idle subscriptions holds one small object rather than closures. A failure of the stream itself
 * (a change feed that lost its place) is answered as its failure kind.
 */
class SubscriptionResults implements AsyncIterableIterator<ExecutionResult> {
  constructor(
    private readonly events: AsyncIterator<unknown>,
    private readonly run: EventRun,
    private readonly runEvent: RunEvent,
  ) {}

  next(): Promise<IteratorResult<ExecutionResult>> {
    return this.events.next().then(this.resultOf, asFailure);
  }

  async return(): Promise<IteratorResult<ExecutionResult>> {
    await this.events.return?.();
    return { value: undefined, done: true };
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  private readonly resultOf = (
    event: IteratorResult<unknown>,
  ): IteratorResult<ExecutionResult> | Promise<IteratorResult<ExecutionResult>> =>
    event.done ? { value: undefined, done: true } : this.runEvent(this.run, event.value).then((value) => ({ value, done: false }));
}

function asFailure(error: unknown): never {
  throw failureOf(error);
}

/**
 * A new request id, held by a subscription for its whole life: `randomUUID`'s text is made of
 * joined pieces (about 400 bytes of heap), its flat copy of 36 characters takes about 90.
 */
function flatRequestId(): string {
  return Buffer.from(randomUUID(), 'latin1').toString('latin1');
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
