import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type Server, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';

import { type ExecutionArgs, type ExecutionResult, GraphQLError, parse } from 'graphql';
import { CloseCode, type Context, handleProtocols, makeServer, type Server as ProtocolServer, type SubscribePayload } from 'graphql-ws';
import { type Server as WebSocketServerOf, type ServerOptions, WebSocketServer } from 'ws';

import type { Authenticator, Caller } from '../auth/authenticator.js';
import type { Clock } from '../clock.js';
import { failureOf } from '../db/database-failures.js';
import { badRequest } from '../errors.js';
import { graphqlAnswer } from '../graphql/failure-answer.js';
import { GRAPHQL_PATH, routesTo } from '../http/route-paths.js';
import { routeUpgrades } from '../http/upgrades.js';
import { BODY_LIMIT_BYTES, CLOSE_GRACE_MS, CONNECTION_INIT_WAIT_MS, KEEP_ALIVE_MS, WEBSOCKET_MESSAGE_ASSEMBLY } from '../limits.js';
import type { Logger } from '../logger.js';
import type { SubscriptionMetrics } from '../observability/subscription-metrics.js';
import { type ConnectionEnds, isBehindLiveStream, type LiveConnection } from '../operations/live-connections.js';
import type { OperationPipeline } from '../operations/pipeline.js';
import { flatRequestId, type LiveResults, type Refusal, type Subscriber } from '../operations/subscriptions.js';
import { checkOrigin } from '../security/cross-origin.js';
import { addressKey, type RateLimits } from '../security/rate-limit.js';
import { type BoundedWebSocket, boundedWebSocketClass } from './bounded-websocket.js';
import { nextPayloadReplacer, openProtocol, protocolClosed } from './protocol-socket.js';
import { SocketOperations } from './socket-operations.js';

/** Subscriptions are served on the GraphQL endpoint itself: on exactly the requests HTTP routes there. */
const routedToGraphql = routesTo(GRAPHQL_PATH);
/** A close code of the WebSocket standard: the server is going away. */
const GOING_AWAY = 1001;
/** A close code of the WebSocket standard: try again later (clients reconnect). */
const TRY_AGAIN_LATER = 1013;
/** The longest reason a close frame carries, in bytes. */
const CLOSE_REASON_BYTES = 123;

export interface WebSocketLimits {
  /** What the server may hold unsent for one socket, in bytes: past it, the socket is dropped. */
  bufferedBytesPerConnection: number;
  /** Messages a second one socket may send, every kind counted, with bursts (`RATE_LIMIT`; 0: no limit). */
  messagesPerSecond: number;
}

export interface WebSocketDoorOptions {
  /** The server `/graphql` is served on: sockets upgrade from its requests. */
  httpServer: Server;
  /** Admits, checks, runs, observes and formats each subscription and each of its events, as for every door. */
  pipeline: OperationPipeline;
  authenticator: Authenticator;
  /** The per-address count of upgrades (the per-caller limit is the pipeline's admission). */
  rateLimits: Pick<RateLimits, 'countAddress'>;
  limits: WebSocketLimits;
  /** The client's address as the HTTP layer sees it (`TRUST_PROXY`). */
  clientAddress(request: IncomingMessage): string | undefined;
  /** Browser origins allowed besides the server's own (`CORS_ORIGINS`). */
  corsOrigins: readonly string[];
  clock: Clock;
  metrics: SubscriptionMetrics;
  logger: Logger;
}

export interface WebSocketDoor {
  /** Closes every socket with 1001 (going away) and refuses new ones; resolves once they are closed (bounded). */
  close(): Promise<void>;
}

/** What this server keeps about one socket: the `extra` of its graphql-ws context. */
interface SocketState {
  socket: BoundedWebSocket;
  /** Its live connection: counted per address and caller, ended at its credential's expiry, releasing its operations when it closes. */
  connection: LiveConnection;
  caller?: Caller;
  /** Until its `connection_init` arrives: the timer that closes it if none does. */
  cancelInitWait?: () => void;
  /** Its subscribe messages, from their arrival until their subscriptions end. */
  operations: SocketOperations;
}

/** What the parts of the server share: its options, its sockets, and what it counts across them. */
interface SocketServer {
  options: WebSocketDoorOptions;
  websockets: WebSocketServerOf<ReturnType<typeof boundedWebSocketClass>>;
  closing: boolean;
}

type SocketContext = Context<Record<string, unknown>, SocketState>;
/** graphql-ws's options: its hooks. */
type ProtocolOptions = Parameters<typeof makeServer<Record<string, unknown>, SocketState>>[0];

/**
 * What `onSubscribe` hands graphql-ws for a subscription the pipeline started: graphql-ws takes a
 * subscription operation to mean "start it", which `onOperation` answers with the pipeline's
 * results. graphql-ws neither validates nor executes it.
 */
const STARTED_BY_THE_PIPELINE = parse('subscription { __typename }');
/** graphql-ws's `subscribe`, called for a started subscription: `onOperation` replaces what it answers. */
const REPLACED_BY_ON_OPERATION = {};

/**
 * The WebSocket door: GraphQL subscriptions over WebSocket (graphql-ws, subprotocol
 * `graphql-transport-ws`) on the same port and path as `/graphql`. It admits sockets (origin,
 * the per-address rate and count of sockets), authenticates each once, in `connection_init`,
 * with the same credentials as HTTP (refused: closed with 4403 before any operation), closes it
 * with 4403 when its access token expires, bounds what it may cost (see `boundedWebSocketClass`)
 * and keeps it alive. Each subscribe message runs the pipeline's admission sequence, then
 * `pipeline.subscribe`, whose answers the door writes; its subscriptions end with the socket.
 */
export function startWebSocketDoor(options: WebSocketDoorOptions): WebSocketDoor {
  const server: SocketServer = {
    options,
    websockets: new WebSocketServer<ReturnType<typeof boundedWebSocketClass>>(websocketServerOptions(options)),
    closing: false,
  };
  const protocol = makeServer(protocolOptions(server));
  routeUpgrades(
    options.httpServer,
    isGraphqlWebSocket,
    (request, socket, head) => void acceptSocket(server, protocol, request, socket, head),
  );
  const keepAlive = setInterval(() => {
    for (const websocket of server.websockets.clients) websocket.keepAlive();
  }, KEEP_ALIVE_MS).unref();
  return {
    async close() {
      server.closing = true;
      clearInterval(keepAlive);
      // Resolves once the last socket has closed: each within CLOSE_GRACE_MS of its close frame.
      const closed = new Promise<void>((resolve) => server.websockets.close(() => resolve()));
      for (const websocket of server.websockets.clients) websocket.close(GOING_AWAY, 'server stopping');
      await closed;
    },
  };
}

/** ws's options for the door's sockets. */
function websocketServerOptions({ limits, clock }: WebSocketDoorOptions) {
  const socketLimits = { maxBufferedBytes: limits.bufferedBytesPerConnection, messagesPerSecond: limits.messagesPerSecond };
  const serverOptions: ServerOptions<ReturnType<typeof boundedWebSocketClass>> & { closeTimeout: number } = {
    noServer: true,
    maxPayload: BODY_LIMIT_BYTES,
    // ws's defaults let a message in 1-byte fragments, or a frame read a byte at a time, hold megabytes.
    maxFragments: WEBSOCKET_MESSAGE_ASSEMBLY.fragments,
    maxBufferedChunks: WEBSOCKET_MESSAGE_ASSEMBLY.reads,
    WebSocket: boundedWebSocketClass(socketLimits, clock),
    handleProtocols,
    // ws 8.23's option (not yet in its type definitions): a socket that does not answer a close frame is cut.
    closeTimeout: CLOSE_GRACE_MS,
  };
  return serverOptions;
}

/** A WebSocket opening on /graphql: the one upgrade this server takes; any other request is served over HTTP. */
function isGraphqlWebSocket(request: IncomingMessage): boolean {
  // One pipelined behind an event stream would take the stream's socket: it is an ordinary request, and waits unrun.
  if (isBehindLiveStream(request.socket)) return false;
  return request.method === 'GET' && request.headers.upgrade?.toLowerCase() === 'websocket' && routedToGraphql(request);
}

/** Opens a socket once its origin, its address's rate and its address's count of sockets allow it, and hands it to graphql-ws. */
async function acceptSocket(
  server: SocketServer,
  protocol: ProtocolServer<SocketState>,
  request: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): Promise<void> {
  const { options, websockets } = server;
  // Counted as the rate limits count addresses: an IPv6 client by its /64, inside which it can rotate freely.
  const address = addressKey(options.clientAddress(request));
  const ends = new SocketEnds();
  let connection: LiveConnection;
  try {
    checkOrigin(request, options.corsOrigins);
    await options.rateLimits.countAddress(address);
    // Counted with the address's event streams from here; it ends when the socket closes, upgraded or not.
    connection = options.pipeline.connections.connect('websocket', address, ends);
  } catch (error) {
    refuseUpgrade(socket, failureOf(error));
    return;
  }
  let upgraded = false;
  websockets.handleUpgrade(request, socket, head, (websocket) => {
    upgraded = true;
    ends.websocket = websocket;
    const state = track(server, websocket, address, connection);
    openProtocol(protocol, websocket, state, options.logger);
    if (server.closing) websocket.close(GOING_AWAY, 'server stopping');
  });
  // ws upgrades in this same step (no `verifyClient`), and the socket's close ends the connection from then
  // (`track`); a socket it refused instead (closed meanwhile, a bad handshake) is watched to its close.
  if (!upgraded) connection.watch(socket);
}

/**
 * Counts an open socket (per address, and in the gauge) until it closes, and logs its protocol
 * errors. Its close, whatever its cause, ends everything it holds at once, before graphql-ws hears of it: its operations at
 * any stage (their per-caller count, gauge and change-feed listeners), its wait for
 * `connection_init` and its place among the credential expiries.
 */
function track(server: SocketServer, websocket: BoundedWebSocket, address: string, connection: LiveConnection): SocketState {
  const { metrics, logger, clock } = server.options;
  const state: SocketState = {
    socket: websocket,
    connection,
    operations: new SocketOperations(),
    cancelInitWait: clock.schedule(
      () => websocket.close(CloseCode.ConnectionInitialisationTimeout, 'Connection initialisation timeout'),
      CONNECTION_INIT_WAIT_MS,
    ),
  };
  metrics.websocketOpened();
  // Its listeners are made here, in one scope: an idle socket holds one closure context for both.
  // A client's protocol error (a message over the size limit, a bad frame) closes its socket with the right code already (1009, 1002).
  websocket.on('error', (error) => logger.debug({ err: error, address }, 'WebSocket closed for a protocol error'));
  // A socket closes once: `on` rather than `once`, whose wrapper an idle socket would hold besides.
  // Its one listener of its own (ws's server has another), graphql-ws's end included: past two, the listeners' array grows to 19 slots.
  websocket.on('close', (code, reason) => {
    state.cancelInitWait?.();
    state.operations.endAll();
    connection.end();
    metrics.websocketClosed();
    if (websocket.endedFor === undefined) logger.debug({ address, code, reason: reason.toString() }, 'WebSocket closed');
    else logger.info({ address, code, endedFor: websocket.endedFor }, `WebSocket ended by the server: ${websocket.endedFor}`);
    protocolClosed(websocket, code, reason);
  });
  return state;
}

/** graphql-ws's hooks: the socket's credential, then each subscribe message's lifecycle; the pipeline answers. */
function protocolOptions(server: SocketServer): ProtocolOptions {
  const { pipeline } = server.options;
  const operationOf = (context: SocketContext, payload: SubscribePayload) => context.extra.operations.of(payload);
  return {
    schema: pipeline.schema,
    // The wait for `connection_init` is the socket's own timer (`track`), let go once it arrives.
    connectionInitWaitTimeout: 0,
    subscribe: () => REPLACED_BY_ON_OPERATION,
    onConnect: (context) => authenticate(server, context.extra, context),
    onSubscribe: (context, id, payload) => startOperation(server, context, id, payload),
    // graphql-ws types results as graphql-js's; these are formatted already, and `onNext` sends each as it is.
    onOperation: (context, _id, payload) => operationOf(context, payload)?.running as AsyncGenerator<ExecutionResult> | undefined,
    // Answers come formatted from the pipeline, which counted them as sent.
    onNext: (_context, _id, _payload, _args, result) => result,
    // Each answer's JSON text is made once for the subscriptions that share it, not once per message.
    jsonMessageReplacer: nextPayloadReplacer,
    onError: (context, _id, payload, errors) => operationOf(context, payload)?.errorsToSend(errors, pipeline.format),
    onComplete: (context, _id, payload) => operationOf(context, payload)?.end(),
  };
}

/** `connection_init`: the socket's caller, and its close with 4403 when their access token expires. */
async function authenticate(server: SocketServer, state: SocketState, context: SocketContext): Promise<boolean> {
  const { authenticator, logger } = server.options;
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
  try {
    // Counted against the caller's cap of live connections, and closed with 4403 when the credential expires.
    state.connection.identify(caller);
  } catch (error) {
    socket.close(TRY_AGAIN_LATER, failureOf(error).message.slice(0, CLOSE_REASON_BYTES));
    return false;
  }
  state.caller = caller;
  return true;
}

/**
 * A subscribe message: admitted (the pipeline's admission sequence), then subscribed through the
 * pipeline, unless the client completed it or the socket closed meanwhile (then what started
 * ends at once). Its id is its own until it ends: a subscribe that reuses it sooner closes the
 * socket as a duplicate id does (4409). A refusal is sent as graphql-ws's `error` message, in the
 * pipeline's words (`onError`).
 */
async function startOperation(
  server: SocketServer,
  context: SocketContext,
  id: string,
  payload: SubscribePayload,
): Promise<ExecutionArgs | readonly GraphQLError[]> {
  const { socket, operations, caller } = context.extra;
  const operation = operations.begin(id, payload, flatRequestId());
  if (operation === undefined) {
    // graphql-ws's own words for a duplicate id, short enough for a close frame. The error is never sent: the socket is closing.
    const reason = `Subscriber for ${id} already exists`;
    socket.close(CloseCode.SubscriberAlreadyExists, Buffer.byteLength(reason) <= CLOSE_REASON_BYTES ? reason : 'Subscriber already exists');
    return [badRequest(reason)];
  }
  const { pipeline } = server.options;
  const subscriber: Subscriber = { caller: caller!, door: 'websocket', requestId: operation.requestId };
  let answer: LiveResults | Refusal;
  try {
    await pipeline.admission.admit(subscriber);
    answer = await pipeline.subscribe(payload, subscriber);
  } catch (error) {
    answer = pipeline.refusal(error, operation.requestId);
  }
  if ('refused' in answer) {
    operation.refuse(answer.refused);
    return [new GraphQLError('refused')];
  }
  // Completed by the client (graphql-ws no longer holds its id, and sends nothing for it) or closed while it started.
  if (!(id in context.subscriptions)) operation.end();
  if (!operation.run(context.extra.connection.adopt(answer, operation.requestId, 'rejection'))) {
    return [new GraphQLError('completed before it started')];
  }
  return { schema: pipeline.schema, document: STARTED_BY_THE_PIPELINE };
}

/** How the live connections end a socket: 4403 when its credential expires, 1001 when the server stops. */
class SocketEnds implements ConnectionEnds {
  websocket: BoundedWebSocket | undefined;

  expired(): void {
    this.websocket?.close(CloseCode.Forbidden, 'Forbidden: credential expired');
  }

  stopping(): void {
    this.websocket?.close(GOING_AWAY, 'server stopping');
  }

  cut(): void {
    this.websocket?.terminate();
  }
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
