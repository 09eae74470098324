import { getOperationAST, getVariableValues, type GraphQLError, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import type { RequestContext } from '../context.js';
import { graphqlErrorRendering, withFailureKinds } from '../errors.js';
import { asGraphQLError, type ExecutionObserver } from '../graphql/compiled-execution.js';
import type { GraphQLLogging } from '../observability/graphql-logging.js';
import type { OperationRecorder } from '../observability/graphql-metrics.js';
import { checkOperationCost, documentChecker } from '../security/operation-limits.js';
import type { OperationResult, PreparedOperation, PreparedRoute } from './executor.js';

export interface CompiledOperationsOptions {
  production: boolean;
  observeExecution: ExecutionObserver;
  recordOperation: OperationRecorder;
  logUnexpected: GraphQLLogging['logUnexpected'];
}

/** Runs one of the table's queries with the caller's context; undefined when it must go through Apollo Server. */
export type CompiledOperations = (
  operation: PreparedOperation,
  context: RequestContext,
  variables: Record<string, unknown>,
) => Promise<OperationResult> | undefined;

/**
 * The REST table's queries as code compiled at start (graphql-jit), run without Apollo Server's
 * request pipeline, whose work is for documents that arrive with the request: hashing and looking
 * up the text, parsing, validating, resolving the operation. Those of the table are known at start,
 * where they are checked against the schema with every validation rule and limit `/graphql`
 * applies (one over a limit is left to Apollo Server, which refuses it). What the pipeline does per request is
 * done here as well, alike: the cost limit with the request's variables, the executor metric,
 * failure kinds, error formatting (masked in production), the log of unexpected errors, and the
 * operation metrics. Mutations, and variables that do not coerce (whose errors graphql-js words),
 * still go through Apollo Server.
 */
export function compiledOperations(schema: GraphQLSchema, routes: readonly PreparedRoute[], options: CompiledOperationsOptions): CompiledOperations {
  const { formatErrors, finishErrors } = graphqlErrorRendering(options.production);
  const checkDocument = documentChecker(schema);
  const compiled = new Map<PreparedOperation['document'], { query: CompiledQuery; operation: OperationDefinitionNode }>();
  for (const { prepared } of routes) {
    // One over a limit is left to Apollo Server, which refuses it on every request as `/graphql` would.
    if (!('kind' in checkDocument(prepared.text))) continue;
    const operation = getOperationAST(prepared.document, prepared.name);
    if (operation?.operation !== 'query') continue;
    const query = compileQuery(schema, prepared.document, prepared.name);
    if (isCompiledQuery(query)) compiled.set(prepared.document, { query, operation });
  }

  async function run(
    prepared: PreparedOperation,
    { query, operation }: { query: CompiledQuery; operation: OperationDefinitionNode },
    context: RequestContext,
    variables: Record<string, unknown>,
  ): Promise<OperationResult> {
    const startedAt = process.hrtime.bigint();
    let errors: readonly GraphQLError[];
    let data: Record<string, unknown> | null | undefined;
    try {
      checkOperationCost(schema, prepared.document, operation, variables);
      options.observeExecution('compiled');
      const executed = await query.query(undefined, context, variables);
      const result = withFailureKinds(executed.errors ? { ...executed, errors: executed.errors.map(asGraphQLError) } : executed);
      data = result.data as Record<string, unknown> | null | undefined;
      errors = result.errors ?? [];
    } catch (error) {
      // Only the cost check throws: the operation did not run, as Apollo Server would answer it.
      errors = [error as GraphQLError];
      data = undefined;
    }
    const answers = finishErrors(formatErrors(errors), context.requestId);
    options.logUnexpected(answers, errors, context.requestId, prepared.name);
    options.recordOperation({ name: prepared.name, type: operation.operation }, answers, startedAt);
    return answers.length > 0 ? { data, errors: answers } : { data };
  }

  return (prepared, context, variables) => {
    const entry = compiled.get(prepared.document);
    if (entry === undefined) return undefined;
    if (getVariableValues(schema, entry.operation.variableDefinitions ?? [], variables).errors !== undefined) return undefined;
    return run(prepared, entry, context, variables);
  };
}
