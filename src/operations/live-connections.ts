import type { Duplex } from 'node:stream';

import type { FormattedExecutionResult } from 'graphql';

import type { Caller } from '../auth/authenticator.js';
import type { Clock } from '../clock.js';
import { credentialExpired, tooManyConnections } from '../errors.js';
import type { SubscriptionTransport } from '../observability/labels.js';
import { ENDED, handOver, type Made, type ResultReader, StreamOf } from '../shared/iteration.js';
import { MostlyOne } from '../shared/mostly-one.js';
import { CredentialExpiries } from './credential-expiries.js';
import type { ErrorFormat } from './format.js';
import type { LiveConnectionLimits } from './subscription-caps.js';
import { type LiveResults, SubscriptionFailure } from './subscriptions.js';

/** What a door does when the connection ends its client's stream or socket, in its protocol's words. */
export interface ConnectionEnds {
  /** The caller's credential expired (a WebSocket closes with 4403; a stream ends its subscriptions with UNAUTHENTICATED). */
  expired(connection: LiveConnection): void;
  /** The server stops: complete every subscription, then end. */
  stopping(connection: LiveConnection): void;
  /** Past the shutdown budget, or never able to end cleanly: cut the connection. */
  cut(): void;
}

/** What a subscription does when it fails or its connection expires: its errors as a last answer (SSE), or a rejected `next` (the others). */
export type FailureShape = 'last answer' | 'rejection';

/**
 * The live connection each socket carries now (see `LiveConnection.watch` and `isBehindLiveStream`):
 * one at a time, as a stream's response is never kept alive (`StreamedResponses.track`).
 */
const watchers = new WeakMap<Duplex, LiveConnection>();

/** A watched socket closed: its connection ends. */
function endWatcher(this: Duplex): void {
  watchers.get(this)?.end();
}

/**
 * Whether `socket` carries an open live connection: an upgrade request pipelined behind an event
 * stream must not take the stream's socket (the app runs other pipelined requests in turn).
 */
export function isBehindLiveStream(socket: Duplex | null | undefined): boolean {
  return socket != null && watchers.has(socket);
}

/**
 * Every live connection of the process, whatever its door: a WebSocket, a Server-Sent Events
 * stream (distinct, or a single-connection stream from its reservation on), a multipart
 * response. Each is counted per client address from the moment it opens and per caller from the
 * moment its caller is known, within `LiveConnectionLimits`; ends when its credential expires;
 * releases every subscription it holds and its place in the counts when it ends, whatever the
 * moment (`ended`, which the door calls when the socket under it closes); and `close` completes
 * every one within the shutdown budget.
 */
export class LiveConnections {
  private readonly byCaller = new Map<number, number>();
  private readonly byAddress = new Map<string, number>();
  private readonly open = new Set<LiveConnection>();
  private readonly expiries: CredentialExpiries<LiveConnection>;
  private closing = false;

  constructor(
    private readonly limits: LiveConnectionLimits,
    clock: Clock,
    private readonly format: ErrorFormat,
  ) {
    this.expiries = new CredentialExpiries(clock, (connection) => connection.ends.expired(connection));
  }

  get isClosing(): boolean {
    return this.closing;
  }

  /**
   * Opens a connection for a client at `address` (and `caller`, when known already), throwing
   * TOO_MANY_CONNECTIONS past a cap. With `socket`, the connection ends when that socket closes,
   * at once if it has closed already, and the socket is known to carry a live stream.
   */
  connect(
    transport: SubscriptionTransport,
    address: string,
    ends: ConnectionEnds,
    options: { caller?: Caller; socket?: Duplex } = {},
  ): LiveConnection {
    if ((this.byAddress.get(address) ?? 0) >= this.limits.perAddress) throw tooManyConnections(this.limits.perAddress, 'address');
    if (options.caller !== undefined) this.checkCaller(options.caller);
    const connection = new LiveConnection(this, transport, address, ends);
    add(this.byAddress, address, 1);
    this.open.add(connection);
    if (options.caller !== undefined) this.identify(connection, options.caller);
    if (options.socket !== undefined) connection.watch(options.socket);
    return connection;
  }

  /** `connection`'s caller is known: counted, and its end scheduled for the credential's expiry. Throws TOO_MANY_CONNECTIONS past the cap. */
  identify(connection: LiveConnection, caller: Caller): void {
    if (!connection.isOpen || connection.caller !== undefined) return;
    this.checkCaller(caller);
    connection.caller = caller;
    add(this.byCaller, caller.userId, 1);
    if (caller.acceptedUntil !== undefined) this.expiries.add(connection, caller.acceptedUntil);
  }

  /** Called once per connection, when it ended: its counts and its expiry let go. */
  released(connection: LiveConnection): void {
    this.open.delete(connection);
    add(this.byAddress, connection.address, -1);
    const caller = connection.caller;
    if (caller === undefined) return;
    add(this.byCaller, caller.userId, -1);
    if (caller.acceptedUntil !== undefined) this.expiries.forget(connection, caller.acceptedUntil);
  }

  /** The errors a subscription ends with when its credential expires, formatted. */
  expiredErrors(requestId: string): SubscriptionFailure {
    return new SubscriptionFailure(this.format.render([credentialExpired()], requestId));
  }

  /**
   * Completes every connection in its protocol's words, and cuts each one still open
   * `budgetMs` later (a client that does not read its end); resolves once all have ended.
   */
  async close(budgetMs: number): Promise<void> {
    this.closing = true;
    const open = [...this.open];
    for (const connection of open) connection.ends.stopping(connection);
    const all = Promise.all(open.map((connection) => connection.closed));
    let timer: NodeJS.Timeout | undefined;
    const budget = new Promise<'over'>((resolve) => (timer = setTimeout(() => resolve('over'), budgetMs).unref()));
    if ((await Promise.race([all, budget])) === 'over') for (const connection of this.open) connection.ends.cut();
    clearTimeout(timer);
    await Promise.all(open.map((connection) => connection.released()));
  }

  private checkCaller(caller: Caller): void {
    if ((this.byCaller.get(caller.userId) ?? 0) >= this.limits.perCaller) throw tooManyConnections(this.limits.perCaller, 'caller');
  }
}

/** Adds `delta` to `key`'s count, forgetting a count that reaches zero. */
function add<K>(counts: Map<K, number>, key: K, delta: number): void {
  const count = (counts.get(key) ?? 0) + delta;
  if (count <= 0) counts.delete(key);
  else counts.set(key, count);
}

/**
 * One live connection, whatever its door: its client's address and caller, the subscriptions it
 * carries (`adopt`), and whether its client takes events now (`take`: a single-connection SSE
 * stream reserved and not yet connected takes none, and its subscriptions run nothing until it
 * does). It ends once (`end`), releasing everything it holds.
 */
export class LiveConnection {
  caller: Caller | undefined;
  /** Made when something first waits for its end (`closed`): most connections end with nobody waiting. */
  private whenClosed: Promise<void> | undefined;
  private resolveClosed: (() => void) | undefined;
  private readonly subscriptions = new MostlyOne<ConnectionSubscription>();
  /** Made by the first subscription to end: most connections carry one subscription, for their whole life. */
  private returning: Set<Promise<void>> | undefined;
  private taking: Promise<void> | undefined;
  private startTaking: (() => void) | undefined;
  private over = false;
  /** The socket it is carried on, when it watches one (see `watch`). */
  private watched: Duplex | undefined;

  constructor(
    private readonly connections: LiveConnections,
    readonly transport: SubscriptionTransport,
    readonly address: string,
    readonly ends: ConnectionEnds,
  ) {}

  /** Settles once it has ended. */
  get closed(): Promise<void> {
    if (this.over) return Promise.resolve();
    return (this.whenClosed ??= new Promise((resolve) => (this.resolveClosed = resolve)));
  }

  get isOpen(): boolean {
    return !this.over;
  }

  /** Its subscriptions wait for `take()` before they run anything (a reservation not yet connected). */
  hold(): void {
    if (this.taking === undefined) this.taking = new Promise((resolve) => (this.startTaking = resolve));
  }

  /** Its client takes events now. */
  take(): void {
    this.startTaking?.();
    this.startTaking = undefined;
    this.taking = undefined;
  }

  /**
   * Ends when `socket` closes (at once if it has): the client went, however and whenever. A
   * connection is carried on one socket: watching another lets go of the first.
   */
  watch(socket: Duplex): void {
    if (socket.destroyed || socket.closed) return this.end();
    this.unwatch();
    // The socket calls its listener with itself as `this`: one function for every socket, no closure each.
    socket.on('close', endWatcher);
    watchers.set(socket, this);
    this.watched = socket;
  }

  private unwatch(): void {
    const socket = this.watched;
    if (socket === undefined) return;
    this.watched = undefined;
    socket.off('close', endWatcher);
    if (watchers.get(socket) === this) watchers.delete(socket);
  }

  /**
   * `results` as a subscription of this connection: held while the connection takes nothing,
   * ended when it ends (at once if it has ended already), its failure in `shape`.
   */
  adopt(results: LiveResults, requestId: string, shape: FailureShape): LiveResults {
    const subscription = new ConnectionSubscription(results, this, requestId, shape);
    if (this.over) subscription.endNow();
    else this.subscriptions.add(subscription);
    return subscription;
  }

  /** Ends each of its subscriptions cleanly (their `complete`): the server stops. */
  completeEach(): void {
    for (const subscription of this.subscriptions.toArray()) subscription.endNow();
  }

  /** Ends each of its subscriptions with the errors of an expired credential: their last answer, or a rejected `next`. */
  expireEach(): void {
    for (const subscription of this.subscriptions.toArray()) subscription.fail(this.connections.expiredErrors(subscription.requestId));
  }

  /** Whether its subscriptions have all ended. */
  get isIdle(): boolean {
    return this.subscriptions.size === 0;
  }

  /** Its caller is known (see `LiveConnections.identify`). */
  identify(caller: Caller): void {
    this.connections.identify(this, caller);
  }

  /** The connection is over: every subscription ends, its counts and its expiry are let go. Idempotent. */
  end(): void {
    if (this.over) return;
    this.over = true;
    this.unwatch();
    this.take();
    for (const subscription of this.subscriptions.toArray()) subscription.endNow();
    this.connections.released(this);
    this.resolveClosed?.();
    this.resolveClosed = undefined;
  }

  /** Waits while the connection takes nothing. */
  whenTaking(): Promise<void> | undefined {
    return this.taking;
  }

  /** `subscription` ended; `returned` settles once its source stream has let go of what it held. */
  forget(subscription: ConnectionSubscription, returned: Promise<void>): void {
    this.subscriptions.delete(subscription);
    const returning = (this.returning ??= new Set());
    returning.add(returned);
    void returned.then(() => returning.delete(returned));
  }

  /** Settles once every subscription it ended has let go of its source stream. */
  async released(): Promise<void> {
    await this.closed;
    await Promise.all([...(this.returning ?? [])]);
  }
}

/**
 * The one shape of a subscription's results as a door writes them: the pipeline's results, which
 * run nothing while the connection takes nothing, end when the connection does, and turn a
 * failure (the stream's, or the credential's expiry) into the door's shape. `return` and `throw`
 * both end it, once.
 */
class ConnectionSubscription extends StreamOf<FormattedExecutionResult, FormattedExecutionResult> implements LiveResults {
  private failure: SubscriptionFailure | undefined;

  constructor(
    private readonly results: LiveResults,
    private readonly connection: LiveConnection,
    readonly requestId: string,
    private readonly shape: FailureShape,
  ) {
    super();
  }

  /**
   * Its next result once the connection takes events. No async function: an idle subscription
   * waits here for its whole life, and a suspended async function holds its frame besides.
   */
  protected readNext(reader: ResultReader<FormattedExecutionResult>): void {
    const taking = this.connection.whenTaking();
    if (taking === undefined) return this.readThrough(this.results, reader);
    void taking.then(() => (this.hasEnded ? handOver(this.afterEnd(), reader) : this.readThrough(this.results, reader)));
  }

  /** A result of the stream, unless the subscription has ended meanwhile (or the stream did). */
  protected step(next: IteratorResult<FormattedExecutionResult>): Made<FormattedExecutionResult> {
    if (!this.hasEnded && !next.done) return next;
    this.endNow();
    return this.afterEnd();
  }

  /** A failure of the stream ends it: a `SubscriptionFailure` as its last words, anything else as a rejection. */
  protected override failed(error: unknown): Promise<IteratorResult<FormattedExecutionResult>> {
    this.endNow();
    if (!(error instanceof SubscriptionFailure)) return Promise.reject(error);
    this.failure ??= error;
    return this.afterEnd();
  }

  /** Ends it without last words. */
  override return(): Promise<IteratorResult<FormattedExecutionResult>> {
    this.failure = undefined;
    return super.return();
  }

  /** Ends with `failure` as its last words (a pending `next` answers them). */
  fail(failure: SubscriptionFailure): void {
    if (this.hasEnded) return;
    this.failure = failure;
    this.endNow();
  }

  endNow(): void {
    void this.end();
  }

  protected release(): void {
    this.connection.forget(
      this,
      this.results.return().then(
        () => {},
        () => {},
      ),
    );
  }

  /** After the end: the failure once, in the door's shape, then done. */
  protected override afterEnd(): Promise<IteratorResult<FormattedExecutionResult>> {
    const failure = this.failure;
    this.failure = undefined;
    if (failure === undefined) return Promise.resolve(ENDED);
    if (this.shape === 'rejection') return Promise.reject(failure);
    return Promise.resolve({ value: { errors: failure.errors }, done: false });
  }
}
