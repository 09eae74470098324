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
import { CloseCode, type Context } from 'graphql-ws';
import { type Extra, useServer } from 'graphql-ws/use/ws';
import { type WebSocket, WebSocketServer } from 'ws';

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
  tooManySubscriptions,
  tooManyWebsockets,
  withFailureKinds,
} from '../errors.js';
import { routeUpgrades } from '../http/upgrades.js';
import { BODY_LIMIT_BYTES } from '../limits.js';
import type { Logger } from '../logger.js';
import { checkOperationCost, documentChecker } from '../security/operation-limits.js';
import { addressKey, type RateLimits } from '../security/rate-limit.js';
import type { DocumentReference } from '../security/trusted-documents.js';
import type { SubscriptionMetrics } from './subscription-metrics.js';

/** The path subscriptions are served on: the GraphQL endpoint itself. */
const GRAPHQL_PATH = '/graphql';
/** How often each socket is pinged; a socket that does not answer within as long again is dropped. */
const KEEP_ALIVE_MS = 12_000;
/** Once stopping, how long sockets may take to finish their closing handshake before they are cut. */
const CLOSE_GRACE_MS = 2_000;
/** Valid documents remembered, by text (the oldest is forgotten first), and the longest text remembered. */
const CHECKED_DOCUMENTS = { count: 200, textLength: 4_096 };
/** A close code of the WebSocket standard: the server is going away. */
const GOING_AWAY = 1001;
/** A close code of the WebSocket standard: try again later (clients reconnect). */
const TRY_AGAIN_LATER = 1013;

export interface SubscriptionCaps {
  /** Subscriptions one caller may have running at once, over all their sockets to this process. */
  subscriptionsPerCaller: number;
  /** Sockets one client address may hold open at once to this process. */
  websocketsPerAddress: number;
}

export interface SubscriptionServerOptions {
  /** The server `/graphql` is served on: sockets upgrade from its requests. */
  httpServer: Server;
  schema: GraphQLSchema;
  authenticator: Authenticator;
  createContext: CreateContext;
  rateLimits: RateLimits;
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
  address: string;
  caller?: Caller;
  cancelExpiry?: () => void;
  /** This socket's subscriptions by id: their Subscription field, and whether their event stream runs yet. */
  subscriptions: Map<string, { field: string; running: boolean }>;
}

type SocketContext = Context<Record<string, unknown>, Extra>;

/**
 * GraphQL subscriptions over WebSocket (graphql-ws, subprotocol `graphql-transport-ws`) on the
 * same port and path as `/graphql`. Each socket authenticates once, in `connection_init`, with
 * the same credentials as HTTP (refused: closed with 4403 before any operation), and is closed
 * with 4403 when its access token expires. Each subscribe message is counted by the per-caller
 * rate limit and checked like an HTTP request: the trusted-documents rule, the token limit while
 * parsing, validation with the same rules (depth, aliases, directives), and the cost. Only
 * subscriptions run here; queries and mutations go over HTTP. Each event runs with a context
 * of its own (fresh services and DataLoaders), so it reads what is stored now.
 */
export function startSubscriptionServer(options: SubscriptionServerOptions): SubscriptionServer {
  const { schema, authenticator, createContext, rateLimits, caps, clock, metrics, logger, production } = options;
  const parseAndValidate = documentChecker(schema);
  const { formatErrors, finishErrors } = graphqlErrorRendering(production);
  const websockets = new WebSocketServer({ noServer: true, maxPayload: BODY_LIMIT_BYTES });
  const socketsByAddress = new Map<string, number>();
  const subscriptionsByCaller = new Map<number, number>();
  let closing = false;

  routeUpgrades(options.httpServer, isGraphqlWebSocket, (request, socket, head) => void upgrade(request, socket, head));

  async function upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    // Counted as the rate limits count addresses: an IPv6 client by its /64, inside which it can rotate freely.
    const address = addressKey(options.clientAddress(request));
    try {
      checkOrigin(request);
      await rateLimits.countAddress(address);
      if ((socketsByAddress.get(address) ?? 0) >= caps.websocketsPerAddress) throw tooManyWebsockets(caps.websocketsPerAddress);
    } catch (error) {
      refuseUpgrade(socket, failureOf(error));
      return;
    }
    websockets.handleUpgrade(request, socket, head, (websocket) => {
      socketsByAddress.set(address, (socketsByAddress.get(address) ?? 0) + 1);
      metrics.websocketOpened();
      websocket.once('close', () => {
        const left = (socketsByAddress.get(address) ?? 1) - 1;
        if (left === 0) socketsByAddress.delete(address);
        else socketsByAddress.set(address, left);
        metrics.websocketClosed();
      });
      states.set(websocket, { address, subscriptions: new Map() });
      websockets.emit('connection', websocket, request);
      // A client's protocol error (a message over the size limit, a bad frame) closes its socket with
      // the right code already (1009, 1002); graphql-ws would also print it to the console as a server fault.
      websocket
        .removeAllListeners('error')
        .on('error', (error) => logger.debug({ err: error, address }, 'WebSocket closed for a protocol error'));
      if (closing) websocket.close(GOING_AWAY, 'server stopping');
    });
  }

  /** Browsers send their page's origin; only the server's own and the CORS_ORIGINS may open a socket. */
  function checkOrigin(request: IncomingMessage): void {
    const origin = request.headers.origin;
    if (origin === undefined || options.corsOrigins.includes(origin)) return;
    if (URL.canParse(origin) && new URL(origin).host === request.headers.host) return;
    throw originNotAllowed(origin);
  }

  const states = new WeakMap<WebSocket, SocketState>();
  const stateOf = (context: SocketContext): SocketState => states.get(context.extra.socket)!;

  function reserve(state: SocketState, id: string, field: string): void {
    const userId = state.caller!.userId;
    const running = subscriptionsByCaller.get(userId) ?? 0;
    if (running >= caps.subscriptionsPerCaller) throw tooManySubscriptions(caps.subscriptionsPerCaller);
    subscriptionsByCaller.set(userId, running + 1);
    state.subscriptions.set(id, { field, running: false });
  }

  function release(state: SocketState, id: string): void {
    const subscription = state.subscriptions.get(id);
    if (subscription === undefined) return;
    state.subscriptions.delete(id);
    if (subscription.running) metrics.subscriptionEnded(subscription.field);
    const userId = state.caller!.userId;
    const left = (subscriptionsByCaller.get(userId) ?? 1) - 1;
    if (left === 0) subscriptionsByCaller.delete(userId);
    else subscriptionsByCaller.set(userId, left);
  }

  /** Errors as Apollo Server renders them over HTTP: a code on each, internal ones logged and (in production) masked. */
  function render(errors: readonly GraphQLError[], requestId: string): GraphQLFormattedError[] {
    const formatted = formatErrors(errors);
    formatted.forEach((answer, index) => {
      const error = errors[index]!;
      if (isInternal(answer)) logger.error({ err: error.originalError ?? error, requestId }, 'unexpected error in a GraphQL subscription');
    });
    return finishErrors(formatted, requestId);
  }

  /** Runs each event with a context of its own, so that DataLoaders never answer from an earlier event. */
  async function subscribe(args: ExecutionArgs): Promise<AsyncIterableIterator<ExecutionResult> | ExecutionResult> {
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
  }

  useServer<Record<string, unknown>>(
    {
      schema,
      subscribe,
      isProd: production,
      async onConnect(context) {
        const state = stateOf(context);
        const authorization = context.connectionParams?.Authorization ?? context.connectionParams?.authorization;
        let caller: Caller | null;
        try {
          caller = typeof authorization === 'string' ? await authenticator.authenticate(authorization) : null;
        } catch (error) {
          logger.warn({ err: error }, 'WebSocket refused: its credential could not be checked');
          context.extra.socket.close(TRY_AGAIN_LATER, 'credentials cannot be checked right now');
          return false;
        }
        if (caller === null) return false;
        state.caller = caller;
        if (caller.acceptedUntil !== undefined) {
          const socket = context.extra.socket;
          state.cancelExpiry = clock.schedule(
            () => socket.close(CloseCode.Forbidden, 'Forbidden: credential expired'),
            caller.acceptedUntil - clock.now(),
          );
        }
        return true;
      },
      async onSubscribe(context, id, payload) {
        const state = stateOf(context);
        try {
          await rateLimits.countCaller(state.caller!.userId);
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
          reserve(state, id, rootFieldOf(operation, document));
          return {
            schema,
            document,
            operationName: payload.operationName,
            variableValues: payload.variables,
            contextValue: createContext(state.caller!, randomUUID()),
          };
        } catch (error) {
          return [error instanceof GraphQLError ? error : failureOf(error)];
        }
      },
      onOperation(context, id, _payload, _args, result) {
        // Its event stream is open: from now on it gets every change (what /readyz and the gauge count).
        const subscription = stateOf(context).subscriptions.get(id);
        if (subscription === undefined || !(Symbol.asyncIterator in (result as object))) return;
        subscription.running = true;
        metrics.subscriptionStarted(subscription.field);
      },
      onNext(context, id, _payload, args, result) {
        const subscription = stateOf(context).subscriptions.get(id);
        if (subscription !== undefined) metrics.eventSent(subscription.field);
        if (result.errors === undefined) return undefined;
        return { ...result, errors: render(result.errors, (args.contextValue as RequestContext).requestId) };
      },
      // A refusal before any context exists: the subscription's own id names it in the log and the answer.
      onError: (_context, id, _payload, errors) => render(errors, id),
      onComplete: (context, id) => release(stateOf(context), id),
      onClose(context) {
        const state = stateOf(context);
        state.cancelExpiry?.();
        for (const id of [...state.subscriptions.keys()]) release(state, id);
      },
    },
    websockets,
    KEEP_ALIVE_MS,
  );

  /**
   * A document parsed and validated, or why it is refused. Clients send the same few documents
   * over and over, so a valid one is checked once and its syntax tree shared (as Apollo Server's
   * document store does over HTTP); the cost, which depends on the variables, is checked each
   * time. Only short valid texts are kept, so that nobody can fill the memory with made-up ones.
   */
  const validDocuments = new Map<string, DocumentNode>();
  function checkedDocument(text: string): DocumentNode | readonly GraphQLError[] {
    const known = validDocuments.get(text);
    if (known !== undefined) return known;
    const checked = parseAndValidate(text);
    if ('kind' in checked && text.length <= CHECKED_DOCUMENTS.textLength) {
      if (validDocuments.size >= CHECKED_DOCUMENTS.count) validDocuments.delete(validDocuments.keys().next().value!);
      validDocuments.set(text, checked);
    }
    return checked;
  }

  return {
    async close() {
      closing = true;
      for (const websocket of websockets.clients) websocket.close(GOING_AWAY, 'server stopping');
      const closed = new Promise<void>((resolve) => websockets.close(() => resolve()));
      const late = setTimeout(() => {
        for (const websocket of websockets.clients) websocket.terminate();
      }, CLOSE_GRACE_MS);
      await closed;
      clearTimeout(late);
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
