import { ApolloArmor } from '@escape.tech/graphql-armor';
import { type DocumentNode, type GraphQLSchema, type OperationDefinitionNode, type ParseOptions, type ValidationRule } from 'graphql';

import { invalidOperation } from '../errors.js';
import { MAX_PAGE_SIZE, OPERATION_LIMITS } from '../limits.js';
import { type CostModel, operationCost } from './operation-cost.js';

export const COST_MODEL: CostModel = { maxPageSize: MAX_PAGE_SIZE, assumedListSize: 10 };

/** The token limit, applied while parsing (`GRAPHQL_PARSE_FAILED`). */
export const PARSE_OPTIONS: ParseOptions = { maxTokens: OPERATION_LIMITS.tokens };

/**
 * Aliases, depth and directives, as validation rules run beside graphql-js's own
 * (`GRAPHQL_VALIDATION_FAILED`), so a document that passes them is cached as valid.
 */
export const LIMIT_RULES: readonly ValidationRule[] = new ApolloArmor({
  // Armor lets aliases of `__typename` through uncounted by default; each is work all the same.
  maxAliases: { n: OPERATION_LIMITS.aliases, allowList: [] },
  maxDepth: { n: OPERATION_LIMITS.depth, flattenFragments: true },
  maxDirectives: { n: OPERATION_LIMITS.directives },
  // Armor's token plugin throws outside Apollo's parse step (a 500 on Apollo 5), so graphql-js's
  // own `maxTokens` parse option counts instead. Its cost rule reads neither variables nor schema
  // defaults, and validation is cached by document text, so the cost is checked per request below.
  maxTokens: { enabled: false },
  costLimit: { enabled: false },
  // Suggestions are hidden in production by Apollo's `hideSchemaDetailsFromClientErrors` and the error rendering.
  blockFieldSuggestion: { enabled: false },
}).protect().validationRules;

/** The cost of each operation whose cost reads no variable: the same for every request. */
const VARIABLE_FREE_COSTS = new WeakMap<OperationDefinitionNode, number>();

/**
 * Throws the invalid-operation failure (HTTP 400) when `operation` with these variables costs more
 * than `OPERATION_LIMITS.cost`. Variables that do not coerce are left to execution, which refuses them.
 * An operation whose cost reads no variable (no page size or id list given by one) is priced once.
 */
export function checkOperationCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown> | undefined,
): void {
  let cost = VARIABLE_FREE_COSTS.get(operation);
  if (cost === undefined) {
    const priced = operationCost(schema, document, operation, variables, COST_MODEL);
    if (priced === null) return;
    cost = priced.cost;
    if (!priced.readsVariables) VARIABLE_FREE_COSTS.set(operation, cost);
  }
  if (cost > OPERATION_LIMITS.cost) {
    throw invalidOperation(`Operation cost limit of ${OPERATION_LIMITS.cost} exceeded, found ${cost}.`);
  }
}
