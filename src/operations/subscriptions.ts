import { randomUUID } from 'node:crypto';

import {
  createSourceEventStream,
  type DocumentNode,
  type ExecutionResult,
  type FormattedExecutionResult,
  getOperationAST,
  type GraphQLError,
  type GraphQLFormattedError,
  type GraphQLSchema,
  Kind,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';

import type { Caller } from '../auth/authenticator.js';
import type { Clock } from '../clock.js';
import { failureOf, withFailureKinds } from '../db/database-failures.js';
import { badRequest } from '../errors.js';
import type { SubscriptionTransport } from '../observability/labels.js';
import type { EventTally, SubscriptionMetrics } from '../observability/subscription-metrics.js';
import type { DocumentReference } from '../security/trusted-documents.js';
import { ENDED, type Made, PullStream, type ResultReader, StreamOf } from '../shared/iteration.js';
import type { Documents } from './documents.js';
import type { Execution } from './execution.js';
import type { ErrorFormat } from './format.js';
import type { OperationHooks, OperationInfo } from './hooks.js';
import type { Observation, OperationObserver } from './observer.js';
import type { CreateOperationContext } from './operation-context.js';
import { SharedExecutions } from './shared-executions.js';
import type { LiveConnectionLimits } from './subscription-caps.js';
import { CallerSubscriptions } from './subscription-caps.js';

/** A subscription as a door hands it over: the document it names (by text or trusted id), which operation, what variables. */
export interface SubscribeRequest extends DocumentReference {
  operationName?: string | null;
  variables?: Record<string, unknown> | null;
}

/**
 * A request the document stage found to name a subscription, the trusted-documents rule applied
 * once: its text and its parsed, validated document, for `subscribe` to run without looking either
 * up again. Made only by `LiveSubscriptions.resolve`.
 */
export class ResolvedSubscription {
  constructor(
    readonly text: string,
    readonly document: DocumentNode,
    readonly operationName: string | null | undefined,
    readonly variables: Record<string, unknown> | null | undefined,
  ) {}
}

/** Who subscribes, through which door, under which request id (in its log lines and internal errors). */
export interface Subscriber {
  readonly caller: Caller;
  readonly door: SubscriptionTransport;
  readonly requestId: string;
}

/** A subscription refused before anything ran: its errors, formatted, for the door to answer in its protocol's words. */
export interface Refusal {
  readonly refused: readonly GraphQLFormattedError[];
}

/**
 * What a subscription yields: each answer formatted and ready to write. The door writes each one
 * and calls `return()` to stop it (idempotent); a subscription that cannot go on (events lost)
 * rejects `next()` with a `SubscriptionFailure`.
 */
export type LiveResults = AsyncIterableIterator<FormattedExecutionResult> & {
  return(): Promise<IteratorResult<FormattedExecutionResult>>;
  /** Ends it as `return` does (libraries end an async generator either way). */
  throw(error?: unknown): Promise<IteratorResult<FormattedExecutionResult>>;
};

/** A subscription ended by the server for a failure of its stream: the errors to send, formatted. */
export class SubscriptionFailure extends Error {
  constructor(readonly errors: readonly GraphQLFormattedError[]) {
    super(errors[0]?.message ?? 'the subscription failed');
  }
}

/** The pipeline's stages a subscription runs through. */
export interface SubscriptionStages {
  schema: GraphQLSchema;
  check(
    request: { text: string; document?: DocumentNode; operationName?: string | null; variables?: Record<string, unknown> | null },
    observation: Observation,
  ): { document: DocumentNode; operation: OperationDefinitionNode } | { errors: readonly GraphQLError[] };
  documents: Documents;
  execution: Execution;
  format: ErrorFormat;
  observer: OperationObserver;
  hooks: OperationHooks;
}

export interface LiveOptions {
  /** Each event's context, and the one that opens a subscription's stream. */
  createContext: CreateOperationContext;
  /** The trusted-documents rule: the text a request names, or a thrown failure refusing it. */
  documentOf(reference: DocumentReference): string | undefined;
  /** Subscriptions one caller may run at once, over every transport. */
  subscriptionsPerCaller: number;
  /** Live connections (sockets and streams) one caller and one address may hold open at once, over every transport. */
  connectionLimits: LiveConnectionLimits;
  /** Times credential expiries. */
  clock: Clock;
  metrics: SubscriptionMetrics;
}

/** How a door is named where it refuses what it does not serve. */
const TRANSPORT_NAMES: Record<SubscriptionTransport, string> = {
  websocket: 'WebSocket',
  sse: 'Server-Sent Events',
  multipart: 'multipart HTTP subscriptions',
};

/** What running a subscription's events takes. */
interface EventRun {
  document: DocumentNode;
  operation: OperationDefinitionNode;
  variables: Record<string, unknown> | undefined;
  subscriber: Subscriber;
  /** The Subscription field it selects: a label of its metrics. */
  field: string;
  /** Its key among the executions subscriptions share (see `SharedExecutions`). */
  sharing: string | undefined;
  /** The events sent to the subscriptions of its field over its door. */
  sent: EventTally;
  /** What the pipeline's hooks are told of it; none without hooks. */
  hooks: OperationInfo | undefined;
}

/** An answer as a subscription's iterator yields it: one object for every subscription that shares it. */
type Answered = IteratorYieldResult<FormattedExecutionResult>;

/**
 * The pipeline's subscribe verb, the same for every door. A subscription is checked like any
 * operation (the trusted-documents rule, the document stage with the limits, the cost), must be a
 * subscription, is told to the pipeline's hooks (which may refuse it), is counted against its
 * caller's cap until it ends, and has its source stream opened with a context of its own; each
 * event then runs through the execute stage with a fresh context (its own services and
 * DataLoaders), once for every subscription of the caller with the same operation and variables
 * (`SharedExecutions`), is told to the hooks, and is formatted. One observation covers the
 * subscribe, and one each executed event.
 */
export class LiveSubscriptions {
  private readonly callers: CallerSubscriptions;
  private readonly shared: SharedExecutions<Answered>;

  constructor(
    private readonly stages: SubscriptionStages,
    private readonly options: LiveOptions,
  ) {
    this.callers = new CallerSubscriptions(options.subscriptionsPerCaller);
    this.shared = new SharedExecutions(stages.schema);
  }

  /** A request, or one `resolve` found to be a subscription (its document is then not looked up again). */
  async subscribe(request: SubscribeRequest | ResolvedSubscription, subscriber: Subscriber): Promise<LiveResults | Refusal> {
    const { caller, door, requestId } = subscriber;
    const { observer, format } = this.stages;
    const observation = observer.start(door, requestId);
    const refuse = (errors: readonly GraphQLError[]): Refusal => {
      observation.finished(errors);
      return { refused: format.render(errors, requestId) };
    };
    let run: EventRun;
    try {
      const resolved = request instanceof ResolvedSubscription ? request : undefined;
      const text = request instanceof ResolvedSubscription ? request.text : this.options.documentOf(request);
      if (text === undefined) throw badRequest('a subscription must carry a GraphQL document');
      const variables = request.variables ?? undefined;
      const checked = this.stages.check(
        { text, document: resolved?.document, operationName: request.operationName, variables },
        observation,
      );
      if ('errors' in checked) return refuse(checked.errors);
      const { document, operation } = checked;
      if (operation.operation !== 'subscription') {
        throw badRequest(`only subscriptions are served over ${TRANSPORT_NAMES[door]}; send queries and mutations to POST /graphql`);
      }
      const hooks = this.stages.hooks.none ? undefined : { door, requestId, caller, document, operation, variables };
      if (hooks !== undefined) await this.stages.hooks.started(hooks);
      this.callers.take(caller.userId);
      const sharing = this.shared.keyOf(operation, variables, caller.userId);
      const field = rootFieldOf(operation, document);
      run = { document, operation, variables, subscriber, field, sharing, sent: this.options.metrics.eventsSent(field, door), hooks };
    } catch (error) {
      return refuse([failureOf(error)]);
    }
    return this.open(run, observation);
  }

  /** See `OperationPipeline.resolve`. */
  resolve(request: SubscribeRequest): ResolvedSubscription | undefined {
    let text: string | undefined;
    try {
      text = this.options.documentOf(request);
    } catch {
      return undefined;
    }
    if (text === undefined) return undefined;
    const document = this.stages.documents.document(text);
    if (!('kind' in document)) return undefined;
    const operationName = request.operationName;
    if (getOperationAST(document, operationName ?? undefined)?.operation !== 'subscription') return undefined;
    return new ResolvedSubscription(text, document, operationName, request.variables);
  }

  /** Opens the source stream; a refusal there (no change streams) is the subscription's one answer. */
  private async open(run: EventRun, observation: Observation): Promise<LiveResults> {
    const { caller, requestId } = run.subscriber;
    const contextValue = this.options.createContext(caller, requestId, observation);
    const { document, variables } = run;
    const operationName = run.operation.name?.value;
    let source: Awaited<ReturnType<typeof createSourceEventStream>>;
    try {
      source = await observation.within(() =>
        createSourceEventStream({ schema: this.stages.schema, document, operationName, variableValues: variables, contextValue }),
      );
    } catch (error) {
      source = { errors: [failureOf(error)] };
    }
    if (!(Symbol.asyncIterator in source)) {
      this.callers.give(caller.userId);
      const answer = await this.told(run, withFailureKinds(source));
      observation.finished(answer.errors);
      return answerOnce(this.formatted(answer, requestId));
    }
    observation.finished(undefined);
    return new SubscriptionStream(source[Symbol.asyncIterator](), run, this);
  }

  /** A subscription's stream opened: counted (per caller, in the gauge) until `ended`. */
  started(run: EventRun): void {
    this.options.metrics.subscriptionStarted(run.field, run.subscriber.door);
  }

  ended(run: EventRun): void {
    this.callers.give(run.subscriber.caller.userId);
    this.options.metrics.subscriptionEnded(run.field, run.subscriber.door);
  }

  /**
   * The answer to one event, shared by the subscriptions that run it alike (the same promise of
   * the same result: a thousand subscribers add no work of their own), counted as sent to this one.
   */
  answer(run: EventRun, event: unknown): Promise<Answered> {
    run.sent.sent += 1;
    return this.shared.run(event, run.sharing, () => this.execute(run, event));
  }

  failure(run: EventRun, error: unknown): SubscriptionFailure {
    return new SubscriptionFailure(this.stages.format.render([failureOf(error)], run.subscriber.requestId));
  }

  /** Runs one event with a context and an observation of its own; its internal errors name the subscription that ran it. */
  private async execute(run: EventRun, event: unknown): Promise<Answered> {
    const { caller, door, requestId } = run.subscriber;
    // A trace of its own: the first subscription to reach the event runs it wherever it is then.
    const observation = this.stages.observer.start(door, requestId, true);
    const context = this.options.createContext(caller, requestId, observation);
    observation.resolved(run.operation);
    const { document, operation, variables } = run;
    const result = await this.told(run, await this.stages.execution.execute({ document, operation, context, variables, rootValue: event }));
    observation.finished(result.errors);
    return { value: this.formatted(result, requestId), done: false };
  }

  /** `result`, once the hooks are told it; a failure one of them throws, instead. */
  private async told(run: EventRun, result: ExecutionResult): Promise<ExecutionResult> {
    const answering = run.hooks && this.stages.hooks.answered(run.hooks, result);
    if (answering === undefined) return result;
    try {
      await answering;
      return result;
    } catch (error) {
      return { errors: [failureOf(error)] };
    }
  }

  private formatted(result: ExecutionResult, requestId: string): FormattedExecutionResult {
    const { errors, ...rest } = result;
    return errors === undefined ? rest : { ...rest, errors: this.stages.format.render(errors, requestId) };
  }
}

/**
 * A subscription's answers: each event of its stream, run. A class, so that each of thousands of
 * idle subscriptions holds one small object rather than closures. A failure of the stream itself
 * (a change feed that lost its place) rejects with a `SubscriptionFailure`.
 */
class SubscriptionStream extends StreamOf<unknown, FormattedExecutionResult> implements LiveResults {
  constructor(
    private readonly events: AsyncIterator<unknown>,
    private readonly run: EventRun,
    private readonly live: LiveSubscriptions,
  ) {
    super();
    live.started(run);
  }

  protected readNext(reader: ResultReader<FormattedExecutionResult>): void {
    this.readThrough(this.events, reader);
  }

  protected async release(): Promise<void> {
    this.live.ended(this.run);
    await this.events.return?.();
  }

  /** An event answered (the answer it shares with the other subscriptions that run it alike). */
  protected step(event: IteratorResult<unknown>): Made<FormattedExecutionResult> {
    return event.done ? ENDED : this.live.answer(this.run, event.value);
  }

  protected override failed(error: unknown): never {
    throw this.live.failure(this.run, error);
  }
}

/** A subscription answered once, then complete: one whose stream could not open, or (for a door that says so in its stream) refused. */
export function answerOnce(answer: FormattedExecutionResult): LiveResults {
  return new AnswerOnce(answer);
}

class AnswerOnce extends PullStream<FormattedExecutionResult> {
  constructor(private answer: FormattedExecutionResult | undefined) {
    super();
  }

  protected readNext(reader: ResultReader<FormattedExecutionResult>): void {
    const value = this.answer!;
    void this.end();
    reader.receive({ value, done: false });
  }

  protected release(): void {
    this.answer = undefined;
  }
}

/**
 * A new request id, held by a subscription for its whole life: `randomUUID`'s text is made of
 * joined pieces (about 400 bytes of heap), its flat copy of 36 characters takes about 90.
 */
export function flatRequestId(): string {
  return Buffer.from(randomUUID(), 'latin1').toString('latin1');
}

/** The one field a (valid) subscription selects at its root, through fragments if need be. */
export function rootFieldOf(operation: OperationDefinitionNode, document: DocumentNode): string {
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
