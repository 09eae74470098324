import {
  type DocumentNode,
  type ExecutionResult,
  getOperationAST,
  GraphQLError,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';

import type { RequestContext } from '../context.js';
import { failureOf } from '../db/database-failures.js';
import { badRequest } from '../errors.js';
import type { Logger } from '../logger.js';
import type { GraphQLMetrics } from '../observability/graphql-metrics.js';
import type { OperationTracer } from '../observability/tracing.js';
import { type AdmissionCheck, AdmissionChecks } from './admission.js';
import { Documents } from './documents.js';
import { Execution } from './execution.js';
import { ErrorFormat } from './format.js';
import { checkOperationCost } from './limits.js';
import { LiveConnections } from './live-connections.js';
import { type Observation, OperationObserver } from './observer.js';
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
  /** What subscriptions need besides the stages: contexts, the trusted-documents rule, the per-caller cap, their metrics. */
  live: LiveOptions;
}

/**
 * The one place that knows how a GraphQL operation runs, for every door: *document* (parse and
 * validate once per text, one bounded cache), *limits* (depth, aliases and directives while
 * validating; the cost once per request, from its variables), *execute* (graphql-jit compiled
 * once, one bounded cache), *format* (errors in a GraphQL answer) and *observe* (metrics, logs,
 * a span per operation).
 *
 * Before any of them, every door runs the one admission sequence (`admission`) once it knows the
 * caller. `/graphql` reaches the stages through Apollo Server's own extension points (its document
 * store, validation rules, executor, `formatError` and a plugin: `graphql/apollo.ts`); the REST
 * table calls `run`; the subscription doors (WebSocket, Server-Sent Events, multipart HTTP) call
 * `subscribe` and write what it yields.
 */
export class OperationPipeline {
  readonly schema: GraphQLSchema;
  readonly documents: Documents;
  readonly execution: Execution;
  readonly format: ErrorFormat;
  readonly observer: OperationObserver;
  readonly admission: AdmissionChecks;
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
    const operation = getOperationAST(document, request.operationName ?? undefined);
    if (operation == null) return { errors: [badRequest('the document must name one operation (operationName) to run')] };
    observation.resolved(operation);
    try {
      checkOperationCost(this.schema, document, operation, request.variables ?? undefined);
    } catch (error) {
      return { errors: [error instanceof GraphQLError ? error : failureOf(error)] };
    }
    return { document, operation };
  }

  /** A whole operation, observed from start to answer: for doors that hand over a request and wait for its result. */
  async run(request: OperationRequest, context: RequestContext): Promise<ExecutionResult> {
    const { observation } = context;
    const checked = this.check(request, observation);
    if ('errors' in checked) {
      observation.finished(checked.errors);
      return { errors: checked.errors };
    }
    const result = await this.execution.execute({ ...checked, context, variables: request.variables ?? undefined, known: request.known });
    observation.finished(result.errors);
    return result;
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
