import { tooManySubscriptions } from '../errors.js';
import type { SubscriptionMetrics } from './subscription-metrics.js';

/** Subscriptions each caller holds, over all their sockets to this process, within a cap. */
export class CallerSubscriptions {
  private readonly held = new Map<number, number>();

  constructor(private readonly cap: number) {}

  /** Counts one more for `userId`; throws TOO_MANY_SUBSCRIPTIONS when they hold the cap already. */
  take(userId: number): void {
    const held = this.held.get(userId) ?? 0;
    if (held >= this.cap) throw tooManySubscriptions(this.cap);
    this.held.set(userId, held + 1);
  }

  give(userId: number): void {
    const left = (this.held.get(userId) ?? 1) - 1;
    if (left === 0) this.held.delete(userId);
    else this.held.set(userId, left);
  }
}

/** What an operation's event stream offers to be ended. */
type Stream = Pick<AsyncIterator<unknown>, 'return'>;

/**
 * One subscribe message, from its arrival until its subscription has ended or it was refused.
 * Each is known by its message's payload (the object graphql-ws hands to every hook of that
 * message), never by its id alone, which a client may reuse once it has completed the first.
 */
export class Operation {
  private reserved: { userId: number; field: string } | undefined;
  private stream: Stream | undefined;
  private ended = false;

  constructor(
    private readonly socket: SocketOperations,
    readonly id: string,
  ) {}

  get hasEnded(): boolean {
    return this.ended;
  }

  /** The Subscription field it selects, once it is counted. */
  get field(): string | undefined {
    return this.reserved?.field;
  }

  /** Counts it against its caller's cap (throws when it is full) until it ends. */
  reserve(userId: number, field: string): void {
    this.socket.callers.take(userId);
    this.reserved = { userId, field };
  }

  /** Its event stream runs: counted (gauge, `/readyz`) until it ends. One that ended already has its stream ended at once. */
  run(stream: Stream): void {
    if (this.ended || this.reserved === undefined) return endStream(stream);
    this.stream = stream;
    this.socket.metrics.subscriptionStarted(this.reserved.field);
  }

  /** Uncounts it and ends its event stream, which removes its change-feed listener. Idempotent. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.socket.forget(this);
    if (this.reserved === undefined) return;
    this.socket.callers.give(this.reserved.userId);
    if (this.stream === undefined) return;
    this.socket.metrics.subscriptionEnded(this.reserved.field);
    endStream(this.stream);
  }
}

/**
 * A socket's operations. An id belongs to one operation from its subscribe message until the
 * server is done with it: graphql-ws frees an id as soon as the client completes it, even while
 * the server still checks or starts that operation, and two operations under one id would be
 * answered under one name. When the socket closes, every operation ends, whatever stage it is at.
 */
export class SocketOperations {
  private readonly byId = new Map<string, Operation>();
  private readonly byPayload = new WeakMap<object, Operation>();

  constructor(
    readonly callers: CallerSubscriptions,
    readonly metrics: SubscriptionMetrics,
  ) {}

  /** The operation of a new subscribe message, or undefined when its id still belongs to another. */
  begin(id: string, payload: object): Operation | undefined {
    if (this.byId.has(id)) return undefined;
    const operation = new Operation(this, id);
    this.byId.set(id, operation);
    this.byPayload.set(payload, operation);
    return operation;
  }

  /** The operation of the subscribe message whose payload this is. */
  of(payload: object): Operation | undefined {
    return this.byPayload.get(payload);
  }

  forget(operation: Operation): void {
    if (this.byId.get(operation.id) === operation) this.byId.delete(operation.id);
  }

  /** The socket closed: every operation ends. */
  endAll(): void {
    for (const operation of [...this.byId.values()]) operation.end();
  }
}

/** Ends a stream without waiting: a stream that fails to end has nobody left to tell. */
function endStream(stream: Stream): void {
  void Promise.resolve(stream.return?.()).catch(() => {});
}
