import {
  type DocumentNode,
  type GraphQLError,
  type GraphQLFormattedError,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import { type CompiledQuery, compileQuery, isCompiledQuery } from 'graphql-jit';
import { LRUCache } from 'lru-cache';

import type { RequestContext } from '../context.js';
import { graphqlErrorRendering, withFailureKinds } from '../errors.js';
import type { GraphQLLogging } from '../observability/graphql-logging.js';
import type { OperationRecorder } from '../observability/graphql-metrics.js';
import { runsWithinCostLimit } from '../security/operation-limits.js';
import { asGraphQLError, type ExecutionObserver } from './compiled-execution.js';

/** A query operation of a document that passed every validation rule and limit, as compiled code. */
export interface CompiledOperation {
  document: DocumentNode;
  operation: OperationDefinitionNode;
  query: CompiledQuery;
}

/** What Apollo Server would have answered: the result, its errors formatted, and the HTTP status and headers they ask for. */
export interface CompiledAnswer {
  data: Record<string, unknown> | null | undefined;
  errors: GraphQLFormattedError[];
  status: number;
  headers: Map<string, string>;
}

/** Runs a compiled operation for one request; undefined when it must go through Apollo Server. */
export type CompiledQueryRunner = (
  compiled: CompiledOperation,
  context: RequestContext,
  variables: Record<string, unknown>,
) => Promise<CompiledAnswer> | undefined;

export interface CompiledQueryOptions {
  production: boolean;
  observeExecution: ExecutionObserver;
  recordOperation: OperationRecorder;
  logUnexpected: GraphQLLogging['logUnexpected'];
}

/**
 * Compiled operations held at once, most recently used kept. One holds about 23 KB of heap (a
 * page with messages and a lookup, measured), so this bounds them at about 6 MB: clients send the
 * same few operations over and over, and one let go is compiled again when it comes back.
 */
const MAX_COMPILED_OPERATIONS = 250;

/** The operation as compiled code, or null when it is no query or graphql-jit cannot compile it. */
export function compileOperation(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
): CompiledOperation | null {
  if (operation.operation !== 'query') return null;
  const query = compileQuery(schema, document, operation.name?.value);
  return isCompiledQuery(query) ? { document, operation, query } : null;
}

/** An operation of a validated document (the very node Apollo Server cached) as compiled code; null when it cannot be. */
export type CompiledOperationLookup = (document: DocumentNode, operation: OperationDefinitionNode) => CompiledOperation | null;

/**
 * The compiled operations of documents that arrive with requests, shared by the executor behind
 * Apollo Server and `/graphql`'s seen queries so that an operation is compiled once, and bounded.
 */
export function compiledOperationCache(schema: GraphQLSchema, max = MAX_COMPILED_OPERATIONS): CompiledOperationLookup {
  const cache = new LRUCache<OperationDefinitionNode, { compiled: CompiledOperation | null }>({ max });
  return (document, operation) => {
    let entry = cache.get(operation);
    if (entry === undefined) {
      entry = { compiled: compileOperation(schema, document, operation) };
      cache.set(operation, entry);
    }
    return entry.compiled;
  };
}

/**
 * Runs validated query operations as compiled code without Apollo Server's request pipeline,
 * whose work is for documents as they arrive: hashing and looking up the text, parsing,
 * validating, resolving the operation, the plugins' hooks. What it does per request is done here
 * alike: the cost limit with the request's variables, the executor metric, failure kinds, error
 * formatting (masked in production, with stack traces outside it), the HTTP status and headers
 * failures ask for, the log of unexpected errors and the operation metrics.
 *
 * Variables that do not coerce and operations over the cost limit are left to Apollo Server: it
 * refuses them before anything runs, in its own words.
 */
export function compiledQueryRunner(schema: GraphQLSchema, options: CompiledQueryOptions): CompiledQueryRunner {
  const { formatErrors, finishErrors } = graphqlErrorRendering(options.production);
  const withStacktraces = !options.production;

  async function run(
    { operation, query }: CompiledOperation,
    context: RequestContext,
    variables: Record<string, unknown>,
    startedAt: bigint,
  ) {
    options.observeExecution('compiled');
    const executed = withFailureKinds(await query.query(undefined, context, variables));
    const errors: readonly GraphQLError[] = executed.errors?.map(asGraphQLError) ?? [];
    const answers = finishErrors(formatErrors(errors, withStacktraces), context.requestId);
    const name = operation.name?.value;
    options.logUnexpected(answers, errors, context.requestId, name);
    options.recordOperation({ name: name ?? 'anonymous', type: operation.operation }, answers, startedAt);
    return { data: executed.data as CompiledAnswer['data'], errors: answers, ...httpHeadOf(errors) };
  }

  return (compiled, context, variables) => {
    const startedAt = process.hrtime.bigint();
    // The cost is computed from the coerced variables: one pass answers both questions.
    if (!runsWithinCostLimit(schema, compiled.document, compiled.operation, variables)) return undefined;
    return run(compiled, context, variables, startedAt);
  };
}

/** The status and headers an answer's errors ask for (`extensions.http`), merged in order as Apollo Server merges them. */
function httpHeadOf(errors: readonly GraphQLError[]): { status: number; headers: Map<string, string> } {
  let status = 200;
  const headers = new Map<string, string>();
  for (const error of errors) {
    const http = error.extensions?.http as { status?: number; headers?: Map<string, string> } | undefined;
    if (http?.status) status = http.status;
    for (const [name, value] of http?.headers ?? []) headers.set(name.toLowerCase(), value);
  }
  return { status, headers };
}
