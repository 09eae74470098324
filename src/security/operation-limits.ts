import type { ApolloServerOptions, ApolloServerPlugin, BaseContext } from '@apollo/server';
import { ApolloArmor } from '@escape.tech/graphql-armor';
import {
  type DocumentNode,
  GraphQLError,
  type GraphQLSchema,
  type OperationDefinitionNode,
  parse,
  specifiedRules,
  validate,
} from 'graphql';

import { invalidOperation } from '../errors.js';
import { MAX_PAGE_SIZE } from '../limits.js';
import { type CostModel, operationCost } from './operation-cost.js';

/**
 * Limits on every GraphQL operation, whether it comes to `/graphql` or from the
 * REST layer (which runs its operations through the same Apollo Server). The
 * schema's deepest useful path is 5 fields (`conversations.edges.node.messages.role`),
 * the legacy web client's operations have under 30 tokens and no aliases, and
 * GraphiQL's introspection query has under 200 tokens.
 */
export const OPERATION_LIMITS = {
  /** Lexical tokens in the document; parsing stops at the first one over. */
  tokens: 1_000,
  aliases: 15,
  /** Nested fields; fragments add no level of their own. */
  depth: 6,
  directives: 10,
  /** See `operationCost`: a page of 100 conversations with their messages costs 3 301, a balance read 1. */
  cost: 5_000,
} as const;

export const COST_MODEL: CostModel = { maxPageSize: MAX_PAGE_SIZE, assumedListSize: 10 };

/**
 * The Apollo Server options that enforce `OPERATION_LIMITS` (the WebSocket server applies the
 * same parse options, rules and cost check to each subscription). Every refusal over HTTP is an
 * HTTP 400 decided before any resolver runs: tokens while parsing (code
 * `GRAPHQL_PARSE_FAILED`), aliases, depth and directives while validating, and the
 * cost once the operation and its variables are known (`GRAPHQL_VALIDATION_FAILED`).
 */
export function operationLimitOptions<TContext extends BaseContext>(): Pick<
  ApolloServerOptions<TContext>,
  'parseOptions' | 'validationRules'
> & { plugin: ApolloServerPlugin<TContext> } {
  const armor = new ApolloArmor({
    // Armor lets aliases of `__typename` through uncounted by default; each is work all the same.
    maxAliases: { n: OPERATION_LIMITS.aliases, allowList: [] },
    maxDepth: { n: OPERATION_LIMITS.depth, flattenFragments: true },
    maxDirectives: { n: OPERATION_LIMITS.directives },
    // Armor's token plugin throws outside Apollo's parse step (a 500 on Apollo 5), so graphql-js's
    // own `maxTokens` parse option counts instead. Its cost rule reads neither variables nor schema
    // defaults, and Apollo caches validation by document text, so the cost is checked by the plugin below.
    maxTokens: { enabled: false },
    costLimit: { enabled: false },
    // Suggestions are hidden in production by Apollo's `hideSchemaDetailsFromClientErrors`.
    blockFieldSuggestion: { enabled: false },
  });
  return {
    parseOptions: { maxTokens: OPERATION_LIMITS.tokens },
    validationRules: armor.protect().validationRules,
    plugin: costLimitPlugin(),
  };
}

/**
 * Checks a document text as Apollo Server does before it runs one, for the paths that run documents
 * outside its pipeline (WebSocket subscriptions, the REST table's compiled queries): the token limit
 * while parsing (`GRAPHQL_PARSE_FAILED`), then every validation rule with the limits
 * (`GRAPHQL_VALIDATION_FAILED`). Answers the document, or why it is refused.
 */
export function documentChecker(schema: GraphQLSchema): (text: string) => DocumentNode | readonly GraphQLError[] {
  const limits = operationLimitOptions();
  const validationRules = [...specifiedRules, ...(limits.validationRules ?? [])];
  return (text) => {
    let document: DocumentNode;
    try {
      document = parse(text, limits.parseOptions);
    } catch (error) {
      if (!(error instanceof GraphQLError)) throw error;
      return [
        new GraphQLError(error.message, { source: error.source, positions: error.positions, extensions: { code: 'GRAPHQL_PARSE_FAILED' } }),
      ];
    }
    const invalid = validate(schema, document, validationRules);
    return invalid.length === 0 ? document : invalid.map(validationFailure);
  };
}

/** A validation error as Apollo Server answers it: with its code (in production, the error rendering hides what it says). */
function validationFailure(error: GraphQLError): GraphQLError {
  return new GraphQLError(error.message, { nodes: error.nodes, extensions: { ...error.extensions, code: 'GRAPHQL_VALIDATION_FAILED' } });
}

/** Whether `operation` may run with these variables: they coerce, and it costs at most `OPERATION_LIMITS.cost`. */
export function runsWithinCostLimit(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown>,
): boolean {
  const cost = operationCost(schema, document, operation, variables, COST_MODEL);
  return cost !== null && cost <= OPERATION_LIMITS.cost;
}

/** Throws the invalid-operation failure when `operation` with these variables costs more than `OPERATION_LIMITS.cost`. */
export function checkOperationCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown> | undefined,
): void {
  const cost = operationCost(schema, document, operation, variables, COST_MODEL);
  if (cost !== null && cost > OPERATION_LIMITS.cost) {
    throw invalidOperation(`Operation cost limit of ${OPERATION_LIMITS.cost} exceeded, found ${cost}.`);
  }
}

function costLimitPlugin<TContext extends BaseContext>(): ApolloServerPlugin<TContext> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ schema, document, operation, request }) {
          if (operation !== undefined) checkOperationCost(schema, document, operation, request.variables);
        },
      };
    },
  };
}
