import type { GraphQLError, GraphQLFormattedError } from 'graphql';

import type { ErrorFormat } from '../operations/format.js';
import { type LiveResults, SubscriptionFailure } from '../operations/subscriptions.js';

/**
 * One subscribe message, from its arrival until its subscription has ended or it was refused:
 * everything the socket keeps about it. Each is known by its message's payload (the object
 * graphql-ws hands to every hook of that message), never by its id alone, which a client may
 * reuse once it has completed the first.
 */
export class SocketOperation {
  private results: LiveResults | undefined;
  private refusal: readonly GraphQLFormattedError[] | undefined;
  private ended = false;

  constructor(
    private readonly socket: SocketOperations,
    readonly id: string,
    /** The subscription's own id: in its log lines and its internal errors. */
    readonly requestId: string,
  ) {}

  get hasEnded(): boolean {
    return this.ended;
  }

  /** What the pipeline yields for it, while it runs. */
  get running(): LiveResults | undefined {
    return this.results;
  }

  /** Its subscription runs until it ends; one that ended meanwhile has its results ended at once. Answers whether it runs. */
  run(results: LiveResults): boolean {
    if (this.ended) {
      endResults(results);
      return false;
    }
    this.results = results;
    return true;
  }

  /** Refused before it ran, with these errors (formatted by the pipeline). */
  refuse(errors: readonly GraphQLFormattedError[]): void {
    this.refusal = errors;
    this.end();
  }

  /** The errors graphql-ws sends for it: its refusal, its subscription's failure, or (never expected) its own errors, formatted. */
  errorsToSend(errors: readonly GraphQLError[], format: ErrorFormat): readonly GraphQLFormattedError[] {
    const failure = errors[0]?.originalError;
    if (this.refusal !== undefined) return this.refusal;
    return failure instanceof SubscriptionFailure ? failure.errors : format.render(errors, this.requestId);
  }

  /** Ends its subscription, which uncounts it and removes its change-feed listener. Idempotent. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.socket.forget(this);
    if (this.results !== undefined) endResults(this.results);
  }
}

/**
 * Every socket's operations, by their subscribe message's payload: one map for all the sockets,
 * as each payload is an object of its own message.
 */
const operationsByPayload = new WeakMap<object, SocketOperation>();

/**
 * A socket's operations. An id belongs to one operation from its subscribe message until the
 * server is done with it: graphql-ws frees an id as soon as the client completes it, even while
 * the server still checks or starts that operation, and two operations under one id would be
 * answered under one name. When the socket closes, every operation ends, whatever stage it is at.
 */
export class SocketOperations {
  /** Its one operation, while it has no other: most sockets carry one at a time, and need no map by id. */
  private only: SocketOperation | undefined;
  /** Its operations by id, once it has carried two at a time. */
  private byId: Map<string, SocketOperation> | undefined;

  /** The operation of a new subscribe message, or undefined when its id still belongs to another. */
  begin(id: string, payload: object, requestId: string): SocketOperation | undefined {
    if (this.holds(id)) return undefined;
    const operation = new SocketOperation(this, id, requestId);
    if (this.byId === undefined && this.only === undefined) this.only = operation;
    else {
      if (this.byId === undefined) {
        // A second at a time: from now on, by id.
        this.byId = new Map([[this.only!.id, this.only!]]);
        this.only = undefined;
      }
      this.byId.set(id, operation);
    }
    operationsByPayload.set(payload, operation);
    return operation;
  }

  private holds(id: string): boolean {
    return this.byId === undefined ? this.only?.id === id : this.byId.has(id);
  }

  /** The operation of the subscribe message whose payload this is. */
  of(payload: object): SocketOperation | undefined {
    return operationsByPayload.get(payload);
  }

  forget(operation: SocketOperation): void {
    if (this.only === operation) this.only = undefined;
    else if (this.byId?.get(operation.id) === operation) this.byId.delete(operation.id);
  }

  /** The socket closed: every operation ends. */
  endAll(): void {
    const operations = this.byId === undefined ? (this.only === undefined ? [] : [this.only]) : [...this.byId.values()];
    for (const operation of operations) operation.end();
  }
}

/** Ends a subscription without waiting: one that fails to end has nobody left to tell. */
export function endResults(results: LiveResults): void {
  void results.return().catch(() => {});
}
