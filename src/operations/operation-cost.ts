import {
  type DocumentNode,
  type FragmentDefinitionNode,
  getArgumentValues,
  getNamedType,
  getNullableType,
  getVariableValues,
  type GraphQLNamedType,
  type GraphQLSchema,
  isInterfaceType,
  isListType,
  isObjectType,
  Kind,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';

export interface CostModel {
  /** The most items a sized field (one with a `first` or `last` argument) returns; the resolvers cap larger requests. */
  maxPageSize: number;
  /** Items assumed for a list that nothing sizes, such as `messages`. */
  assumedListSize: number;
}

/** Arguments that size a connection: a page is as long as whichever of them is given. */
const PAGE_SIZE_ARGUMENTS = ['first', 'last'];
/** Arguments whose list the field answers item for item: `nodes(ids:)`, and a subgraph's `_entities(representations:)`. */
const LIST_ARGUMENTS = ['ids', 'representations'];

/**
 * What an operation costs, from the request's own variables:
 * every field costs 1, and a list costs its selection times its length. A list
 * right under a field with a `first` or `last` argument (`nodes`, `edges` of a
 * connection) is as long as the larger of them, whether given as a literal, a
 * variable or the schema's default, and `maxPageSize` long when neither is given
 * (capped at `maxPageSize`); a list field with an `ids` argument (`nodes(ids:)`),
 * or a subgraph's `representations` (`_entities`), is as long as that list; any
 * other list counts as `assumedListSize`.
 * Meta fields (`__typename`, introspection) cost nothing.
 *
 * Returns null when the variables do not fit the operation: execution then
 * refuses the request before any resolver runs. `readsVariables` says whether
 * the cost depended on them: when it did not, it is the operation's for any.
 */
export function operationCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown> | undefined,
  model: CostModel,
): { cost: number; readsVariables: boolean } | null {
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables ?? {});
  if (coerced.errors) return null;
  const variableValues = coerced.coerced;

  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  // A fragment's cost depends only on the list length it inherits. Priced once each, fragments that
  // spread other fragments several times over cannot make pricing take exponential time.
  const fragmentCosts = new Map<string, number>();
  let readsVariables = false;

  function selectionCost(selectionSet: SelectionSetNode, parentType: GraphQLNamedType, inheritedSize: number | undefined): number {
    let cost = 0;
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) {
        if (!isObjectType(parentType) && !isInterfaceType(parentType)) continue;
        const field = parentType.getFields()[selection.name.value];
        if (field === undefined) continue; // meta fields, and anything validation has already refused
        const sized = field.args.some((argument) => PAGE_SIZE_ARGUMENTS.includes(argument.name));
        const listed = field.args.find((argument) => LIST_ARGUMENTS.includes(argument.name))?.name;
        if ((sized || listed) && selection.arguments?.some((argument) => holdsVariable(argument.value))) readsVariables = true;
        const values = sized || listed ? getArgumentValues(field, selection, variableValues) : {};
        const size = sized ? pageSize(values, model.maxPageSize) : undefined;
        const list = listed === undefined ? undefined : values[listed];
        const ownLength = Array.isArray(list) ? list.length : undefined;
        const length = isListType(getNullableType(field.type)) ? (ownLength ?? inheritedSize ?? model.assumedListSize) : 1;
        const children = selection.selectionSet ? selectionCost(selection.selectionSet, getNamedType(field.type), size) : 0;
        cost += length * (1 + children);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        const type = selection.typeCondition ? schema.getType(selection.typeCondition.name.value) : parentType;
        if (type) cost += selectionCost(selection.selectionSet, type, inheritedSize);
      } else {
        const fragment = fragments.get(selection.name.value);
        const type = fragment && schema.getType(fragment.typeCondition.name.value);
        if (!fragment || !type) continue;
        const key = `${fragment.name.value}:${inheritedSize}`;
        let fragmentCost = fragmentCosts.get(key);
        if (fragmentCost === undefined) {
          fragmentCost = selectionCost(fragment.selectionSet, type, inheritedSize);
          fragmentCosts.set(key, fragmentCost);
        }
        cost += fragmentCost;
      }
    }
    return cost;
  }

  const rootType = schema.getRootType(operation.operation);
  if (!rootType) return null;
  const cost = selectionCost(operation.selectionSet, rootType, undefined);
  return { cost, readsVariables };
}

function holdsVariable(value: ValueNode): boolean {
  if (value.kind === Kind.VARIABLE) return true;
  if (value.kind === Kind.LIST) return value.values.some(holdsVariable);
  if (value.kind === Kind.OBJECT) return value.fields.some((field) => holdsVariable(field.value));
  return false;
}

function pageSize(values: Record<string, unknown>, maxPageSize: number): number {
  const given = PAGE_SIZE_ARGUMENTS.map((name) => values[name]).filter((value) => typeof value === 'number');
  if (given.length === 0) return maxPageSize;
  return Math.min(Math.max(...given, 0), maxPageSize);
}
