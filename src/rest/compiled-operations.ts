import { getOperationAST, type GraphQLSchema } from 'graphql';

import type { RequestContext } from '../context.js';
import { type CompiledOperation, type CompiledQueryRunner, compileOperation } from '../graphql/compiled-queries.js';
import { documentChecker } from '../security/operation-limits.js';
import type { OperationResult, PreparedOperation, PreparedRoute } from './executor.js';

/** Runs one of the table's queries with the caller's context; undefined when it must go through Apollo Server. */
export type CompiledOperations = (
  operation: PreparedOperation,
  context: RequestContext,
  variables: Record<string, unknown>,
) => Promise<OperationResult> | undefined;

/**
 * The REST table's queries as code compiled at start, run as `/graphql` runs the documents it
 * has seen before (graphql/compiled-queries.ts). They are known at start, where they are checked
 * against the schema with every validation rule and limit `/graphql` applies; one over a limit is
 * left to Apollo Server, which refuses it on every request as `/graphql` would. Mutations still go
 * through Apollo Server.
 */
export function compiledOperations(schema: GraphQLSchema, routes: readonly PreparedRoute[], run: CompiledQueryRunner): CompiledOperations {
  const checkDocument = documentChecker(schema);
  const compiled = new Map<PreparedOperation['document'], CompiledOperation>();
  for (const { prepared } of routes) {
    if (!('kind' in checkDocument(prepared.text))) continue;
    const operation = getOperationAST(prepared.document, prepared.name);
    const compiledOperation = operation && compileOperation(schema, prepared.document, operation);
    if (compiledOperation) compiled.set(prepared.document, compiledOperation);
  }

  return (prepared, context, variables) => {
    const entry = compiled.get(prepared.document);
    const answer = entry && run(entry, context, variables);
    return answer?.then(({ data, errors }) => (errors.length > 0 ? { data, errors } : { data }));
  };
}
