import {
  type DocumentNode,
  execute,
  type ExecutionResult,
  GraphQLError,
  type GraphQLSchema,
  Kind,
  type OperationDefinitionNode,
} from 'graphql';
import { type CompiledQuery, compileQuery, isCompiledQuery } from 'graphql-jit';
import { LRUCache } from 'lru-cache';

import { withFailureKinds } from '../db/database-failures.js';
import { badUserInput } from '../errors.js';
import type { OperationContext } from './operation-context.js';

/** One operation of a valid document, ready to run for one request (or one subscription event). */
export interface ExecutionRequest {
  document: DocumentNode;
  operation: OperationDefinitionNode;
  /** What the resolvers see: any context with what the pipeline needs (`OperationContext`). */
  context: OperationContext;
  variables: Record<string, unknown> | undefined;
  /** A subscription event: what the operation's root field resolves from. */
  rootValue?: unknown;
  /** Known before any request (the REST table's operations): compiled on its first run rather than its second. */
  known?: boolean;
}

/**
 * Compiled operations held at once, most recently used kept. One holds about 23 KB of heap (a
 * page with messages and a lookup, measured), so this bounds them at about 6 MB: clients send the
 * same few operations over and over, and one let go is compiled again when it comes back.
 */
const MAX_COMPILED_OPERATIONS = 250;

/**
 * The execute stage. Queries and subscription events run as JavaScript compiled by graphql-jit
 * with the schema's resolvers unchanged: about ten times less work per field than graphql-js
 * interpreting the document. Each operation is compiled once (held in one bounded cache), on its
 * second run, so that one-off documents never pay for compiling; the REST table's on their first.
 *
 * Mutations (whose fields run one after another), variables that do not coerce, and documents
 * graphql-jit cannot compile run on graphql-js's `execute`, so their answers and errors are
 * exactly graphql-js's. A resolver that could not reach the database answers the
 * database-unavailable failure where it failed; an answer past its response budget, the refusal.
 */
export class Execution {
  private readonly compiled = new LRUCache<OperationDefinitionNode, { query: CompiledQuery | null }>({ max: MAX_COMPILED_OPERATIONS });
  /** Per operation of a cached document: whether it ran once already. */
  private readonly ranOnce = new WeakSet<OperationDefinitionNode>();

  constructor(private readonly schema: GraphQLSchema) {}

  /**
   * Runs inside the operation's span (`Observation.within`): the database commands and provider
   * calls it makes are its spans. An answer that went past its response budget is the refusal
   * alone: nothing of what was resolved is written out.
   */
  async execute(request: ExecutionRequest): Promise<ExecutionResult> {
    const result = await request.context.observation.within(() => this.run(request));
    const { refusal } = request.context.budget;
    return refusal === undefined ? result : { errors: [refusal] };
  }

  private async run(request: ExecutionRequest): Promise<ExecutionResult> {
    const query = this.compiledFor(request);
    if (query !== null) {
      const result = await query.query(request.rootValue, request.context, request.variables ?? {});
      // Variables that do not coerce are graphql-jit's only answer without `data`, given before
      // any resolver runs: graphql-js answers them instead, in its own words.
      if (result.data !== undefined) {
        request.context.observation.executed('compiled');
        return withFailureKinds(result.errors ? { ...result, errors: result.errors.map(asGraphQLError) } : result);
      }
    }
    request.context.observation.executed('graphql-js');
    return withFailureKinds(withInputCodes(await this.interpret(request)));
  }

  /** graphql-js's answer to a document none of whose operations the request names. */
  async unresolved(document: DocumentNode, operationName: string | undefined): Promise<ExecutionResult> {
    return execute({ schema: this.schema, document, operationName });
  }

  private interpret({ document, operation, context, variables, rootValue }: ExecutionRequest): Promise<ExecutionResult> {
    const operationName = operation.name?.value;
    return Promise.resolve(
      execute({ schema: this.schema, document, operationName, contextValue: context, variableValues: variables, rootValue }),
    );
  }

  private compiledFor({ document, operation, known }: ExecutionRequest): CompiledQuery | null {
    if (operation.operation === 'mutation') return null;
    let entry = this.compiled.get(operation);
    if (entry === undefined) {
      if (!known && !this.ranOnce.has(operation)) {
        this.ranOnce.add(operation);
        return null;
      }
      const query = compileQuery(this.schema, document, operation.name?.value);
      entry = { query: isCompiledQuery(query) ? query : null };
      this.compiled.set(operation, entry);
    }
    return entry.query;
  }
}

/** The code of an error the client made in its input. */
const INPUT_CODE = badUserInput('').extensions.code;

/**
 * graphql-js answers variables that do not coerce with errors of no code and no `data`, before any
 * resolver runs: the client's mistake, so each gets the code Apollo Server gives it
 * (`BAD_USER_INPUT`), whatever the door, and is observed as such rather than as an internal error.
 */
function withInputCodes(result: ExecutionResult): ExecutionResult {
  if (result.data !== undefined || result.errors === undefined) return result;
  const errors = result.errors.map((error) =>
    error.extensions.code === undefined && error.nodes?.length === 1 && error.nodes[0]!.kind === Kind.VARIABLE_DEFINITION
      ? new GraphQLError(error.message, {
          nodes: error.nodes,
          originalError: error.originalError,
          extensions: { ...error.extensions, code: INPUT_CODE },
        })
      : error,
  );
  return { ...result, errors };
}

/**
 * graphql-jit's errors have no `extensions` when the resolver's error had none, which Apollo's
 * error formatting requires: this makes the error graphql-js would have made, with graphql-jit's
 * locations (graphql-js computes them from AST nodes, which graphql-jit does not keep).
 */
function asGraphQLError(error: GraphQLError): GraphQLError {
  const normalized = new GraphQLError(error.message, {
    path: error.path,
    originalError: error.originalError ?? undefined,
    extensions: error.extensions ?? undefined,
  });
  return Object.assign(normalized, { locations: error.locations });
}
