import {
  type DocumentNode,
  type ExecutionResult,
  getOperationAST,
  GraphQLError,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';

import { failureOf } from '../db/database-failures.js';
import { badRequest } from '../errors.js';
import type { Logger } from '../logger.js';
import type { GraphQLMetrics } from '../observability/graphql-metrics.js';
import type { OperationTracer } from '../observability/tracing.js';
import { type AdmissionCheck, AdmissionChecks } from './admission.js';
import { Documents } from './documents.js';
import { Execution } from './execution.js';
import { ErrorFormat } from './format.js';
import { type OperationHook, OperationHooks, type OperationInfo } from './hooks.js';
import { introspectionRule } from './introspection.js';
import { checkOperationCost } from './limits.js';
import { LiveConnections } from './live-connections.js';
import { type Observation, OperationObserver } from './observer.js';
import type { OperationContext } from './operation-context.js';
import {
  type LiveOptions,
  type LiveResults,
  LiveSubscriptions,
  type Refusal,
  type ResolvedSubscription,
  type Subscriber,
  type SubscribeRequest,
} from './subscriptions.js';

/** An operation as a door hands it over: a document's text, which of its operations, with what variables. */
export interface OperationRequest {
  text: string;
  /** `documentIdOf(text)`, when the door knows it already (the REST table computes it once, at start). */
  id?: string;
  /** The document stage's answer for `text`, when the door has it already (`resolve`): not looked up again. */
  document?: DocumentNode;
  /** The operation of `document` the request names, when the door resolved it already (Apollo Server does). */
  operation?: OperationDefinitionNode;
  operationName?: string | null;
  variables?: Record<string, unknown> | null;
  /** Known before any request (the REST table's): compiled on its first run. */
  known?: boolean;
}

/** An operation that passed the document stage and the limits: ready to execute. */
export interface CheckedOperation {
  document: DocumentNode;
  operation: OperationDefinitionNode;
}

export interface PipelineOptions {
  schema: GraphQLSchema;
  production: boolean;
  metrics: GraphQLMetrics;
  logger: Logger;
  /** A span per operation; none unless given. */
  tracer?: OperationTracer;
  /** The admission sequence every door runs once its caller is known (the per-caller rate limit first). */
  admissionChecks: readonly AdmissionCheck[];
  /** Extensions told of every operation of every door, in this order (`hooks.ts`). */
  hooks?: readonly OperationHook[];
  /** In production, the users who may introspect the schema nonetheless (`introspection.ts`). */
  introspectionUsers?: readonly number[];
  /** What subscriptions need besides the stages: contexts, the trusted-documents rule, the per-caller cap, their metrics. */
  live: LiveOptions;
}

/**
 * The one place that knows how a GraphQL operation runs, for every door, and orders its stages:
 * *document* (parse and validate once per text, one bounded cache), *limits* (depth, aliases and
 * directives while validating; the cost once per request, from its variables), the *hooks*
 * (`hooks.ts`: told each operation, which they may refuse), *execute* (graphql-jit compiled once,
 * one bounded cache), the hooks again (told its result), *format* (errors in a GraphQL answer)
 * and *observe* (metrics, logs, a span per operation).
 *
 * Before any of them, every door runs the one admission sequence (`admission`) once it knows the
 * caller. `run` takes a query or a mutation through them, `subscribe` a subscription (each of its
 * events through the execute stage, the hooks and the format stage). The REST table calls `run`;
 * `/graphql` too, as Apollo Server's executor, once Apollo Server (the door's HTTP protocol:
 * batches, automatic persisted queries) has the document from the document stage's cache
 * (`graphql/apollo.ts`); the subscription doors (WebSocket, Server-Sent Events, multipart HTTP)
 * call `subscribe` and write what it yields. The format stage of a `run` is its door's: Apollo
 * Server's `formatError` with `format.formatError` for `/graphql`, the legacy body for the REST table.
 */
export class OperationPipeline {
  readonly schema: GraphQLSchema;
  readonly documents: Documents;
  readonly execution: Execution;
  readonly format: ErrorFormat;
  readonly observer: OperationObserver;
  readonly admission: AdmissionChecks;
  readonly hooks: OperationHooks;
  /** Every live connection (WebSocket, event stream), whatever its door: counted, bounded, ended when its client goes or its credential expires. */
  readonly connections: LiveConnections;
  private readonly live: LiveSubscriptions;

  constructor(options: PipelineOptions) {
    this.schema = options.schema;
    this.documents = new Documents(options.schema);
    this.execution = new Execution(options.schema);
    this.format = new ErrorFormat(options.production);
    this.observer = new OperationObserver(options.metrics, options.logger, options.tracer);
    this.admission = new AdmissionChecks(options.admissionChecks);
    // Production's introspection rule first: a per-caller refusal, before the operator's hooks are told.
    const introspection = options.production ? [introspectionRule(options.schema, options.introspectionUsers ?? [])] : [];
    this.hooks = new OperationHooks([...introspection, ...(options.hooks ?? [])]);
    this.live = new LiveSubscriptions(this, options.live);
    this.connections = new LiveConnections(options.live.connectionLimits, options.live.clock, this.format);
  }

  /**
   * The document and limit stages: the operation to run (told to `observation` as soon as it is
   * known), or the errors refusing it before anything runs.
   */
  check(request: OperationRequest, observation: Observation): CheckedOperation | { errors: readonly GraphQLError[] } {
    const document = request.document ?? this.documents.document(request.text, request.id);
    if (!('kind' in document)) return { errors: document };
    const operation = request.operation ?? getOperationAST(document, request.operationName ?? undefined);
    if (operation == null) return { errors: [badRequest('the document must name one operation (operationName) to run')] };
    observation.resolved(operation);
    try {
      checkOperationCost(this.schema, document, operation, request.variables ?? undefined);
    } catch (error) {
      return { errors: [error instanceof GraphQLError ? error : failureOf(error)] };
    }
    return { document, operation };
  }

  /**
   * A whole operation, observed from start to answer, for doors that hand over a request and wait
   * for its result: document, limits, hooks, execute, hooks, observe. The errors come back as they
   * were raised, for the door's format stage.
   */
  async run(request: OperationRequest, context: OperationContext): Promise<ExecutionResult> {
    const { observation } = context;
    const checked = this.check(request, observation);
    if ('errors' in checked) return this.refused(checked.errors, observation);
    const variables = request.variables ?? undefined;
    const info = this.hooks.none ? undefined : this.infoOf(checked, variables, context);
    const starting = info && this.hooks.started(info);
    if (starting !== undefined) {
      try {
        await starting;
      } catch (error) {
        return this.refused([failureOf(error)], observation);
      }
    }
    const result = await this.execution.execute({ ...checked, context, variables, known: request.known });
    const answering = info && this.hooks.answered(info, result);
    if (answering !== undefined) {
      try {
        await answering;
      } catch (error) {
        return this.refused([failureOf(error)], observation);
      }
    }
    observation.finished(result.errors);
    return result;
  }

  /** What the hooks are told of an operation about to run with `context`. */
  private infoOf(checked: CheckedOperation, variables: Record<string, unknown> | undefined, context: OperationContext): OperationInfo {
    const { caller, requestId, observation } = context;
    return { door: observation.door, requestId, caller, document: checked.document, operation: checked.operation, variables };
  }

  private refused(errors: readonly GraphQLError[], observation: Observation): ExecutionResult {
    observation.finished(errors);
    return { errors };
  }

  /**
   * A subscription, for a subscriber the door has admitted: its answers, formatted, until the door
   * calls `return()`; or the errors refusing it before anything ran.
   */
  subscribe(request: SubscribeRequest | ResolvedSubscription, subscriber: Subscriber): Promise<LiveResults | Refusal> {
    return this.live.subscribe(request, subscriber);
  }

  /**
   * The subscription `request` names (by text, or by a trusted id the rule accepts), resolved once:
   * the trusted-documents rule applied, the document parsed and validated, the operation it names a
   * subscription. For a door that shares its route with queries and mutations, which decides with it
   * whether the request is its own and then hands it to `subscribe` as it is. Anything else, invalid
   * documents and refused ids included, is `undefined`: left to the route's other door, which answers it.
   */
  resolve(request: SubscribeRequest): ResolvedSubscription | undefined {
    return this.live.resolve(request);
  }

  /** The errors refusing a subscription for `error` (thrown by the admission sequence), formatted. */
  refusal(error: unknown, requestId: string): Refusal {
    return { refused: this.format.render([failureOf(error)], requestId) };
  }
}
