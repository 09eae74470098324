import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type Server, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';

import {
  createSourceEventStream,
  type DocumentNode,
  execute,
  type ExecutionArgs,
  type ExecutionResult,
  getOperationAST,
  GraphQLError,
  type GraphQLFormattedError,
  type GraphQLSchema,
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
import {
  badRequest,
  failureOf,
  graphqlAnswer,
  graphqlErrorRendering,
  isInternal,
  originNotAllowed,
  tooManyWebsockets,
  withFailureKinds,
} from '../errors.js';
import { routeUpgrades } from '../http/upgrades.js';
import { BODY_LIMIT_BYTES } from '../limits.js';
import type { Logger } from '../logger.js';
import { checkOperationCost, documentChecker } from '../security/operation-limits.js';
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
/** Valid documents remembered, by text (the oldest is forgotten first), and the longest text remembered. */
const CHECKED_DOCUMENTS = { count: 200, textLength: 4_096 };
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
  schema: GraphQLSchema;
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
 * rate limit and checked like an HTTP request: the trusted-documents rule, the token limit while
 * parsing, validation with the same rules (depth, aliases, directives), and the cost. Only
 * subscriptions run here; queries and mutations go over HTTP. Each event runs with a context
 * of its own (fresh services and DataLoaders), so it reads what is stored now. What a socket may
 * cost is bounded (see `boundedWebSocketClass`), and its subscriptions end with it.
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

/** Browsers send their page's origin; only the server's own and the CORS_ORIGINS may open a socket. */
function checkOrigin(request: IncomingMessage, corsOrigins: readonly string[]): void {
  const origin = request.headers.origin;
  if (origin === undefined || corsOrigins.includes(origin)) return;
  if (URL.canParse(origin) && new URL(origin).host === request.headers.host) return;
  throw originNotAllowed(origin);
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
  const render = errorRenderer(options.production, options.logger);
  return {
    schema: options.schema,
    subscribe: subscribeEach(options.createContext),
    isProd: options.production,
    onConnect: (context) => authenticate(options, stateOf(context), context),
    onSubscribe: (context, id, payload) => startOperation(options, stateOf(context), check, context, id, payload),
    onOperation(context, _id, payload, _args, result) {
      // Its event stream is open: from now on it gets every change (what /readyz and the gauge count).
      const operation = stateOf(context).operations.of(payload);
      if (Symbol.asyncIterator in (result as object)) operation?.run(result as AsyncIterator<unknown>);
    },
    onNext(context, _id, payload, args, result) {
      const field = stateOf(context).operations.of(payload)?.field;
      if (field !== undefined) options.metrics.eventSent(field);
      if (result.errors === undefined) return undefined;
      return { ...result, errors: render(result.errors, (args.contextValue as RequestContext).requestId) };
    },
    // A refusal before any context exists: the subscription's own id names it in the log and the answer.
    onError: (_context, id, _payload, errors) => render(errors, id),
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
  options: SubscriptionServerOptions,
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
  try {
    const checked = await check(state.caller!, payload);
    if (!('document' in checked)) {
      operation.end();
      return checked;
    }
    // Completed by the client (graphql-ws no longer holds its id, and sends nothing for it) or closed while it was checked.
    if (operation.hasEnded || !(id in context.subscriptions)) {
      operation.end();
      return [badRequest('completed before it started')];
    }
    operation.reserve(state.caller!.userId, checked.field);
    return {
      schema: options.schema,
      document: checked.document,
      operationName: payload.operationName,
      variableValues: payload.variables,
      contextValue: options.createContext(state.caller!, randomUUID()),
    };
  } catch (error) {
    operation.end();
    return [error instanceof GraphQLError ? error : failureOf(error)];
  }
}

/**
 * The checks of a subscribe message, as over HTTP: the caller's rate limit, the trusted-documents
 * rule, parsing and validation, one subscription operation, its cost. Answers its document and
 * root field, or the validation errors; throws a failure to refuse it otherwise.
 */
function subscribeChecks(options: SubscriptionServerOptions) {
  const { schema, rateLimits } = options;
  const checkedDocument = documentCache(documentChecker(schema));
  return async (
    caller: Caller,
    payload: SubscribePayload,
  ): Promise<{ document: DocumentNode; field: string } | readonly GraphQLError[]> => {
    await rateLimits.countCaller(caller.userId);
    const text = options.documentOf(payload);
    if (text === undefined) throw badRequest('a subscribe message must carry a GraphQL document');
    const document = checkedDocument(text);
    if (!('kind' in document)) return document;
    const operation = getOperationAST(document, payload.operationName);
    if (operation == null) throw badRequest('the document must name one operation (operationName) to run');
    if (operation.operation !== 'subscription') {
      throw badRequest('only subscriptions are served over WebSocket; send queries and mutations to POST /graphql');
    }
    checkOperationCost(schema, document, operation, payload.variables ?? undefined);
    return { document, field: rootFieldOf(operation, document) };
  };
}

/** Errors as Apollo Server renders them over HTTP: a code on each, internal ones logged and (in production) masked. */
function errorRenderer(production: boolean, logger: Logger) {
  const { formatErrors, finishErrors } = graphqlErrorRendering(production);
  return (errors: readonly GraphQLError[], requestId: string): GraphQLFormattedError[] => {
    const formatted = formatErrors(errors);
    formatted.forEach((answer, index) => {
      const error = errors[index]!;
      if (isInternal(answer)) logger.error({ err: error.originalError ?? error, requestId }, 'unexpected error in a GraphQL subscription');
    });
    return finishErrors(formatted, requestId);
  };
}

/** Runs each event with a context of its own, so that DataLoaders never answer from an earlier event. */
function subscribeEach(createContext: CreateContext) {
  return async function subscribe(args: ExecutionArgs): Promise<AsyncIterableIterator<ExecutionResult> | ExecutionResult> {
    const source = await createSourceEventStream(args);
    if (!(Symbol.asyncIterator in source)) return withFailureKinds(source);
    const { caller, requestId } = args.contextValue as RequestContext;
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
        const result = await execute({ ...args, rootValue: event.value, contextValue: createContext(caller, requestId) });
        return { value: withFailureKinds(result as ExecutionResult), done: false };
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

/**
 * A document parsed and validated, or why it is refused. Clients send the same few documents
 * over and over, so a valid one is checked once and its syntax tree shared (as Apollo Server's
 * document store does over HTTP); the cost, which depends on the variables, is checked each
 * time. Only short valid texts are kept, so that nobody can fill the memory with made-up ones.
 */
function documentCache(parseAndValidate: ReturnType<typeof documentChecker>) {
  const validDocuments = new Map<string, DocumentNode>();
  return (text: string): DocumentNode | readonly GraphQLError[] => {
    const known = validDocuments.get(text);
    if (known !== undefined) return known;
    const checked = parseAndValidate(text);
    if ('kind' in checked && text.length <= CHECKED_DOCUMENTS.textLength) {
      if (validDocuments.size >= CHECKED_DOCUMENTS.count) validDocuments.delete(validDocuments.keys().next().value!);
      validDocuments.set(text, checked);
    }
    return checked;
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
