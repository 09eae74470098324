import type { GraphQLSchema } from 'graphql';
import { MongoNetworkError } from 'mongodb';
import { Registry } from 'prom-client';

import type { AccountStore } from '../../../src/accounts/account.store.js';
import { billingResolvers } from '../../../src/billing/billing.resolvers.js';
import { BillingService } from '../../../src/billing/billing.service.js';
import { systemClock } from '../../../src/clock.js';
import { type CreateContext, RequestContext } from '../../../src/context.js';
import type { ConversationRecord } from '../../../src/conversations/conversation.model.js';
import { conversationResolvers } from '../../../src/conversations/conversation.resolvers.js';
import { type AnswerCharge, ConversationService } from '../../../src/conversations/conversation.service.js';
import type { ConversationStore, NumberRange, ReadAllowance } from '../../../src/conversations/conversation.store.js';
import { subscriptionsUnavailable } from '../../../src/errors.js';
import { buildSchema } from '../../../src/graphql/schema.js';
import { createLogger, type Logger } from '../../../src/logger.js';
import { graphqlMetrics } from '../../../src/observability/graphql-metrics.js';
import { type SubscriptionMetrics, subscriptionMetrics } from '../../../src/observability/subscription-metrics.js';
import type { AdmissionCheck } from '../../../src/operations/admission.js';
import type { OperationHook } from '../../../src/operations/hooks.js';
import type { Observation } from '../../../src/operations/observer.js';
import { OperationPipeline } from '../../../src/operations/pipeline.js';
import { ResponseBudget } from '../../../src/operations/response-budget.js';
import type { DocumentReference } from '../../../src/security/trusted-documents.js';
import type { BalanceEvent } from '../../../src/subscriptions/balance-updates.js';
import type { ConversationChange } from '../../../src/subscriptions/conversation-events.js';
import { subscriptionResolvers } from '../../../src/subscriptions/subscription.resolvers.js';
import type { SubscriptionService } from '../../../src/subscriptions/subscription.service.js';

/** The gateway's schema with every domain's resolvers, as `service.ts` builds it: built once per test file. */
let schema: GraphQLSchema | undefined;
export function gatewaySchema(): GraphQLSchema {
  return (schema ??= buildSchema([conversationResolvers, billingResolvers, subscriptionResolvers]));
}

/**
 * Conversations in memory, answering the store's reads as the database-backed store does (scoped to
 * one owner, newest or oldest first, each row admitted by its size) and counting the reads, so that
 * a test can tell a batched read from many.
 */
export class MemoryConversations implements Pick<
  ConversationStore,
  'page' | 'any' | 'findMany' | 'messagesOf' | 'count' | 'remove' | 'removeAll' | 'rename'
> {
  readonly reads: string[] = [];
  /** A read that fails as a lost connection does, while set. */
  unreachable = false;

  constructor(readonly rows: ConversationRecord[] = []) {}

  private owned(userId: number, range: NumberRange = {}): ConversationRecord[] {
    if (this.unreachable) throw new MongoNetworkError('connection lost');
    return this.rows.filter(
      (row) =>
        row.userId === userId && (range.below === undefined || row.id < range.below) && (range.above === undefined || row.id > range.above),
    );
  }

  private admitted<T>(rows: T[], allowance: ReadAllowance): T[] {
    let bytes = 0;
    for (const row of rows) {
      bytes += JSON.stringify(row).length;
      allowance.admit(bytes);
    }
    return structuredClone(rows);
  }

  async page(userId: number, limit: number, range: NumberRange, from: 'newest' | 'oldest', allowance: ReadAllowance) {
    this.reads.push('page');
    const rows = this.owned(userId, range).sort((a, b) => (from === 'newest' ? b.id - a.id : a.id - b.id));
    return this.admitted(
      rows.slice(0, limit).map(({ messages: _messages, ...summary }) => summary),
      allowance,
    );
  }

  async any(userId: number, range: NumberRange) {
    this.reads.push('any');
    return this.owned(userId, range).length > 0;
  }

  async findMany(userId: number, ids: readonly number[], allowance: ReadAllowance) {
    this.reads.push(`findMany ${ids.join(',')}`);
    return this.admitted(
      this.owned(userId).filter((row) => ids.includes(row.id)),
      allowance,
    );
  }

  async messagesOf(userId: number, ids: readonly number[], allowance: ReadAllowance) {
    this.reads.push(`messagesOf ${ids.join(',')}`);
    return this.admitted(
      this.owned(userId)
        .filter((row) => ids.includes(row.id))
        .map(({ id, messages }) => ({ id, messages })),
      allowance,
    );
  }

  async count(userId: number) {
    return this.owned(userId).length;
  }

  async remove(userId: number, id: number) {
    const index = this.rows.findIndex((row) => row.userId === userId && row.id === id);
    if (index >= 0) this.rows.splice(index, 1);
    return index >= 0;
  }

  async removeAll(userId: number) {
    const before = this.rows.length;
    this.rows.splice(0, this.rows.length, ...this.rows.filter((row) => row.userId !== userId));
    return before - this.rows.length;
  }

  async rename(userId: number, id: number, name: string) {
    const row = this.rows.find((candidate) => candidate.userId === userId && candidate.id === id);
    if (row === undefined) return null;
    row.name = name;
    const { messages: _messages, ...summary } = row;
    return { ...summary };
  }
}

/** Balances in memory, by user, in micro-points. */
export function memoryAccounts(balances: Record<number, number>): AccountStore {
  const accounts: Pick<AccountStore, 'balance' | 'billingAccount'> = {
    balance: async (userId) => ({ micros: balances[userId] ?? 0, pendingOrders: [] }),
    billingAccount: async () => null,
  };
  return accounts as AccountStore;
}

/**
 * A source of events for the Subscription fields: each `push` goes to every subscription open at
 * the time (the same object to each, as a change feed hands it), `fail` ends them all with an error.
 */
export class FakeEventSource<Event> {
  private readonly listeners = new Set<{ push(event: Event): void; fail(error: unknown): void }>();
  opened = 0;
  closed = 0;

  get open(): number {
    return this.listeners.size;
  }

  push(event: Event): void {
    for (const listener of this.listeners) listener.push(event);
  }

  fail(error: unknown): void {
    for (const listener of this.listeners) listener.fail(error);
  }

  subscribe(): AsyncIterableIterator<Event> {
    const waiting: ((result: IteratorResult<Event>) => void)[] = [];
    const rejecting: ((error: unknown) => void)[] = [];
    const queued: Event[] = [];
    let failure: unknown;
    let ended = false;
    const listener = {
      push: (event: Event) => {
        const resolve = waiting.shift();
        rejecting.shift();
        if (resolve) resolve({ value: event, done: false });
        else queued.push(event);
      },
      fail: (error: unknown) => {
        failure = error;
        waiting.shift();
        rejecting.shift()?.(error);
      },
    };
    this.listeners.add(listener);
    this.opened += 1;
    const end = async (): Promise<IteratorResult<Event>> => {
      ended = true;
      if (this.listeners.delete(listener)) this.closed += 1;
      waiting.shift()?.({ value: undefined, done: true });
      return { value: undefined, done: true };
    };
    return {
      next: () => {
        if (ended) return Promise.resolve({ value: undefined, done: true });
        if (queued.length > 0) return Promise.resolve({ value: queued.shift()!, done: false });
        if (failure !== undefined) return Promise.reject(failure);
        return new Promise((resolve, reject) => {
          waiting.push(resolve);
          rejecting.push(reject);
        });
      },
      return: end,
      throw: end,
      [Symbol.asyncIterator]() {
        return this;
      },
    };
  }
}

export interface FakeWorld {
  conversations: MemoryConversations;
  balances: Record<number, number>;
  balanceEvents: FakeEventSource<BalanceEvent>;
  conversationEvents: FakeEventSource<ConversationChange>;
  /** Set to make the Subscription fields answer as a database without change streams does. */
  subscriptionsUnavailable: boolean;
}

export function fakeWorld(rows: ConversationRecord[] = [], balances: Record<number, number> = {}): FakeWorld {
  return {
    conversations: new MemoryConversations(rows),
    balances,
    balanceEvents: new FakeEventSource(),
    conversationEvents: new FakeEventSource(),
    subscriptionsUnavailable: false,
  };
}

/** The context factory `service.ts` builds, over the world's stores and event sources. */
export function contextFactory(world: FakeWorld, responseMaxBytes = 1024 * 1024): CreateContext {
  const accounts = memoryAccounts(world.balances);
  const services = {
    conversations: (caller: { userId: number }, budget: AnswerCharge) =>
      new ConversationService(world.conversations as unknown as ConversationStore, caller.userId, budget),
    billing: (caller: { userId: number }) => new BillingService(accounts, caller.userId),
    subscriptions: (caller: { userId: number }) => {
      const service: Pick<SubscriptionService, 'balance' | 'conversationEvents'> = {
        balance: async () => {
          if (world.subscriptionsUnavailable) throw subscriptionsUnavailable('the database has no change streams');
          return world.balanceEvents.subscribe();
        },
        conversationEvents: async () => {
          const events = world.conversationEvents.subscribe();
          return filtered(events, (change) => change.userId === caller.userId);
        },
      };
      return service as SubscriptionService;
    },
  };
  return (caller, requestId, observation) =>
    new RequestContext(caller, requestId, observation, new ResponseBudget(responseMaxBytes), services);
}

function filtered<T>(events: AsyncIterableIterator<T>, keep: (event: T) => boolean): AsyncIterableIterator<T> {
  return {
    async next() {
      for (;;) {
        const result = await events.next();
        if (result.done || keep(result.value)) return result;
      }
    },
    return: () => events.return!(),
    throw: (error) => events.throw!(error),
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}

/** An observation that records what it is told, for tests of one stage alone. */
export function recordingObservation(): Observation & { executors: string[]; finishedWith: unknown[]; resolvedTo: string[] } {
  const executors: string[] = [];
  const finishedWith: unknown[] = [];
  const resolvedTo: string[] = [];
  return {
    executors,
    finishedWith,
    resolvedTo,
    door: 'rest',
    operationName: undefined,
    resolved: (operation) => resolvedTo.push(operation.name?.value ?? 'anonymous'),
    executed: (executor) => executors.push(executor),
    within: (work) => work(),
    finished: (errors) => finishedWith.push(errors),
  };
}

/** Log lines, as objects. */
export function capturedLogger(): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ logLevel: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { logger, lines };
}

export interface TestPipeline {
  pipeline: OperationPipeline;
  registry: Registry;
  lines: Record<string, unknown>[];
  world: FakeWorld;
  createContext: CreateContext;
  /** The subscription metrics the pipeline reports to. */
  subscriptionMetrics: SubscriptionMetrics;
}

/** The operation pipeline as `service.ts` builds it, over a fake world, with real metrics in a registry of its own. */
export function testPipeline(
  options: {
    world?: FakeWorld;
    production?: boolean;
    admissionChecks?: AdmissionCheck[];
    subscriptionsPerCaller?: number;
    documentOf?: (reference: DocumentReference) => string | undefined;
    responseMaxBytes?: number;
    hooks?: OperationHook[];
    introspectionUsers?: number[];
  } = {},
): TestPipeline {
  const world = options.world ?? fakeWorld();
  const registry = new Registry();
  const { logger, lines } = capturedLogger();
  const createContext = contextFactory(world, options.responseMaxBytes);
  const subscriptions = subscriptionMetrics();
  const pipeline = new OperationPipeline({
    schema: gatewaySchema(),
    production: options.production ?? false,
    metrics: graphqlMetrics(registry, []),
    logger,
    admissionChecks: options.admissionChecks ?? [],
    hooks: options.hooks,
    introspectionUsers: options.introspectionUsers,
    live: {
      createContext,
      documentOf: options.documentOf ?? ((reference) => (typeof reference.query === 'string' ? reference.query : undefined)),
      subscriptionsPerCaller: options.subscriptionsPerCaller ?? 20,
      connectionLimits: { perCaller: 50, perAddress: 100 },
      clock: systemClock,
      metrics: subscriptions,
    },
  });
  return { pipeline, registry, lines, world, createContext, subscriptionMetrics: subscriptions };
}

/** A metric's value for the given labels, 0 when never counted. */
export async function metricValue(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (metric === undefined) return 0;
  const { values } = await metric.get();
  return values
    .filter((value) => Object.entries(labels).every(([key, wanted]) => String(value.labels[key]) === wanted))
    .reduce((sum, value) => sum + value.value, 0);
}

export function conversation(userId: number, id: number, messages = [{ role: 'user', content: `hello ${id}` }]): ConversationRecord {
  return { userId, id, name: `conversation ${id}`, model: 'gpt-4o', enableWeb: false, messages };
}
