import type { Document } from 'bson';

import { CommandError, ErrorCode } from '../errors.js';
import { compileFilter, compileValueCondition, isOperatorDocument, type MatchContext } from '../matcher.js';
import { formatDocument, formatValue, isDocument, isNumber, isPlainObject, numberOf, typeName } from '../values.js';

// Parsing an update: operators and their paths into a tree, as MongoDB's
// UpdateObjectNode does (so conflicts are found the same way), with every
// operand checked before any document is touched.

/** One update statement, decoded keeping BSON number types (typed view). */
export interface UpdateStatement {
  filter: Document;
  update: Document | Document[];
  arrayFilters?: Document[];
  /** `let` variables, for `$expr` in the filter and pipeline-style updates. */
  variables?: Document;
}

/** A parsed update, ready to apply to any number of documents. */
export type CompiledUpdate =
  | { kind: 'replacement'; replacement: Document }
  | { kind: 'pipeline'; pipeline: Document[]; variables?: Document }
  | {
      kind: 'operators';
      tree: InternalNode;
      arrayFilters: Map<string, (element: unknown) => boolean>;
      filter: Document;
      context: MatchContext;
    };

export function updateKind(update: unknown): CompiledUpdate['kind'] {
  if (Array.isArray(update)) return 'pipeline';
  if (!isPlainObject(update)) throw new CommandError(ErrorCode.FailedToParse, 'Update argument must be either an object or an array');
  const first = Object.keys(update)[0];
  return first !== undefined && first.startsWith('$') ? 'operators' : 'replacement';
}

type Operator =
  | '$set'
  | '$setOnInsert'
  | '$unset'
  | '$inc'
  | '$mul'
  | '$min'
  | '$max'
  | '$rename'
  | '$currentDate'
  | '$push'
  | '$addToSet'
  | '$pop'
  | '$pull'
  | '$pullAll'
  | '$bit'
  | '$renameSource';

const OPERATORS = new Set<string>([
  '$set',
  '$setOnInsert',
  '$unset',
  '$inc',
  '$mul',
  '$min',
  '$max',
  '$rename',
  '$currentDate',
  '$push',
  '$addToSet',
  '$pop',
  '$pull',
  '$pullAll',
  '$bit',
]);

export interface LeafNode {
  kind: 'leaf';
  operator: Operator;
  /** The path as written, for messages. */
  path: string;
  operand: unknown;
  /** Prepared form of the operand (e.g. a compiled $pull condition, $push modifiers). */
  prepared?: unknown;
}

/** Children by field name; `$` (positional), `$[]` and `$[id]` are children too. */
export interface InternalNode {
  kind: 'internal';
  children: Map<string, UpdateNode>;
}

type UpdateNode = LeafNode | InternalNode;

export const ARRAY_FILTER_IDENTIFIER = /^\$\[(.*)\]$/;

export function compileUpdate(statement: UpdateStatement): CompiledUpdate {
  const kind = updateKind(statement.update);
  if (kind === 'replacement') return { kind, replacement: statement.update as Document };
  if (kind === 'pipeline') return { kind, pipeline: checkPipeline(statement.update as Document[]), variables: statement.variables };

  const arrayFilters = compileArrayFilters(statement.arrayFilters, statement.variables);
  const used = new Set<string>();
  const tree: InternalNode = { kind: 'internal', children: new Map() };
  for (const [operator, paths] of Object.entries(statement.update as Document)) {
    if (!OPERATORS.has(operator)) {
      throw new CommandError(
        ErrorCode.FailedToParse,
        `Unknown modifier: ${operator}. Expected a valid update modifier or pipeline-style update specified as an array`,
      );
    }
    if (!isPlainObject(paths)) {
      throw new CommandError(
        ErrorCode.FailedToParse,
        `Modifiers operate on fields but we found type ${typeName(paths)} instead. For example: {$mod: {<field>: ...}} not {${operator}: ${formatValue(paths)}}`,
      );
    }
    for (const [path, operand] of Object.entries(paths)) {
      if (operator === '$rename') {
        if (typeof operand !== 'string') {
          throw new CommandError(ErrorCode.BadValue, `The 'to' field for $rename must be a string: ${path}: ${formatValue(operand)}`);
        }
        checkRenamePath(path, 'source');
        checkRenamePath(operand, 'destination');
        if (path === operand)
          throw new CommandError(
            ErrorCode.BadValue,
            `The source and target field for $rename must differ: ${path}: ${formatValue(operand)}`,
          );
        if (operand.startsWith(`${path}.`) || path.startsWith(`${operand}.`)) {
          throw new CommandError(
            ErrorCode.BadValue,
            `The source and target field for $rename must not be on the same path: ${path}: ${formatValue(operand)}`,
          );
        }
        addLeaf(tree, { kind: 'leaf', operator: '$renameSource', path, operand }, arrayFilters, used);
        addLeaf(tree, { kind: 'leaf', operator: '$rename', path: operand, operand: path }, arrayFilters, used);
        continue;
      }
      const leaf: LeafNode = { kind: 'leaf', operator: operator as Operator, path, operand };
      prepareLeaf(leaf, statement.variables);
      addLeaf(tree, leaf, arrayFilters, used);
    }
  }
  for (const identifier of arrayFilters.keys()) {
    if (!used.has(identifier)) {
      throw new CommandError(
        ErrorCode.FailedToParse,
        `The array filter for identifier '${identifier}' was not used in the update ${formatDocument(statement.update as Document)}`,
      );
    }
  }
  return { kind, tree, arrayFilters, filter: statement.filter, context: { variables: statement.variables } };
}

function checkRenamePath(path: string, role: string): void {
  checkPath(path);
  if (path.split('.').some((part) => part === '$' || ARRAY_FILTER_IDENTIFIER.test(part))) {
    throw new CommandError(ErrorCode.BadValue, `The ${role} field for $rename may not be dynamic: ${path}`);
  }
}

function checkPath(path: string): string[] {
  if (path.length === 0) throw new CommandError(ErrorCode.EmptyFieldName, 'An empty update path is not valid.');
  const parts = path.split('.');
  if (parts.some((part) => part.length === 0)) {
    throw new CommandError(ErrorCode.EmptyFieldName, `The update path '${path}' contains an empty field name, which is not allowed.`);
  }
  return parts;
}

function addLeaf(tree: InternalNode, leaf: LeafNode, arrayFilters: Map<string, unknown>, used: Set<string>): void {
  const parts = checkPath(leaf.path);
  const positional = parts.filter((part) => part === '$').length;
  if (positional > 1) throw new CommandError(ErrorCode.BadValue, `Too many positional (i.e. '$') elements found in path '${leaf.path}'`);
  if (parts[0] === '$') {
    throw new CommandError(ErrorCode.BadValue, `Cannot have positional (i.e. '$') element in the first position in path '${leaf.path}'`);
  }
  parts.forEach((part, i) => {
    const identifier = ARRAY_FILTER_IDENTIFIER.exec(part)?.[1];
    if (identifier === undefined) return;
    if (i === 0) {
      throw new CommandError(
        ErrorCode.BadValue,
        `Cannot have array filter identifier (i.e. '$[<id>]') element in the first position in path '${leaf.path}'`,
      );
    }
    if (identifier !== '' && !arrayFilters.has(identifier)) {
      throw new CommandError(ErrorCode.BadValue, `No array filter found for identifier '${identifier}' in path '${leaf.path}'`);
    }
    if (identifier !== '') used.add(identifier);
  });
  let node = tree;
  for (let i = 0; i < parts.length - 1; i++) {
    const child = node.children.get(parts[i]!);
    if (child && child.kind !== 'internal') {
      throw conflict(leaf.path, parts.slice(0, i + 1).join('.'));
    }
    if (child) {
      node = child;
      continue;
    }
    const created: InternalNode = { kind: 'internal', children: new Map() };
    node.children.set(parts[i]!, created);
    node = created;
  }
  const last = parts[parts.length - 1]!;
  if (node.children.has(last)) throw conflict(leaf.path, leaf.path);
  node.children.set(last, leaf);
}

function conflict(path: string, at: string): CommandError {
  return new CommandError(ErrorCode.ConflictingUpdateOperators, `Updating the path '${path}' would create a conflict at '${at}'`);
}

function compileArrayFilters(filters: Document[] | undefined, variables?: Document): Map<string, (element: unknown) => boolean> {
  const out = new Map<string, (element: unknown) => boolean>();
  for (const filter of filters ?? []) {
    if (!isPlainObject(filter)) throw new CommandError(ErrorCode.TypeMismatch, 'Each array filter must be an object');
    const identifiers = new Set<string>();
    const collect = (clause: Document): void => {
      for (const [key, value] of Object.entries(clause)) {
        if (key === '$and' || key === '$or' || key === '$nor') {
          if (Array.isArray(value)) for (const part of value) if (isPlainObject(part)) collect(part);
          continue;
        }
        if (key.startsWith('$')) continue;
        identifiers.add(key.split('.')[0]!);
      }
    };
    collect(filter);
    if (identifiers.size !== 1) {
      throw new CommandError(
        ErrorCode.FailedToParse,
        identifiers.size === 0
          ? 'Cannot use an expression without a top-level field name in arrayFilters'
          : `Error parsing array filter :: caused by :: Expected a single top-level field name, found '${[...identifiers][0]}' and '${[...identifiers][1]}'`,
      );
    }
    const [identifier] = identifiers as unknown as [string];
    if (!/^[a-z][a-zA-Z0-9]*$/.test(identifier)) {
      throw new CommandError(
        ErrorCode.BadValue,
        `Error parsing array filter :: caused by :: The top-level field name must be an alphanumeric string beginning with a lowercase letter, found '${identifier}'`,
      );
    }
    if (out.has(identifier))
      throw new CommandError(ErrorCode.FailedToParse, `Found multiple array filters with the same top-level field name ${identifier}`);
    const matcher = compileFilter(filter, { variables });
    out.set(identifier, (element) => matcher.test({ [identifier]: element }));
  }
  return out;
}

const PUSH_MODIFIERS = new Set(['$each', '$slice', '$sort', '$position']);

export interface PushModifiers {
  each: unknown[];
  slice?: number;
  sort?: 1 | -1 | Document;
  position?: number;
}

function integerArgument(value: unknown, message: string): number {
  if (!isNumber(value) || !Number.isInteger(numberOf(value))) throw new CommandError(ErrorCode.BadValue, message);
  return numberOf(value);
}

/** Checks an operand once, before any document is touched. */
function prepareLeaf(leaf: LeafNode, variables?: Document): void {
  const { operator, operand, path } = leaf;
  switch (operator) {
    case '$inc':
    case '$mul':
      if (!isNumber(operand)) {
        throw new CommandError(
          ErrorCode.TypeMismatch,
          `Cannot ${operator === '$inc' ? 'increment' : 'multiply'} with non-numeric argument: {${path}: ${formatValue(operand)}}`,
        );
      }
      return;
    case '$currentDate': {
      const type = isPlainObject(operand) ? operand.$type : undefined;
      if (typeof operand === 'boolean') return;
      if (!isPlainObject(operand) || Object.keys(operand).length !== 1 || (type !== 'date' && type !== 'timestamp')) {
        throw new CommandError(
          ErrorCode.BadValue,
          `The '$type' string field is required to be 'date' or 'timestamp': {$currentDate: {field : {$type: 'date'}}}`,
        );
      }
      return;
    }
    case '$pop':
      if (!isNumber(operand) || (numberOf(operand) !== 1 && numberOf(operand) !== -1)) {
        throw new CommandError(ErrorCode.FailedToParse, `Expected a number in: ${path}: ${formatValue(operand)}`);
      }
      return;
    case '$pullAll':
      if (!Array.isArray(operand))
        throw new CommandError(ErrorCode.BadValue, `$pullAll requires an array argument but was given a ${typeName(operand)}`);
      return;
    case '$pull':
      leaf.prepared = pullCondition(operand, { variables });
      return;
    case '$bit': {
      if (!isPlainObject(operand))
        throw new CommandError(
          ErrorCode.BadValue,
          `The $bit modifier is not compatible with a ${typeName(operand)}. You must pass in an embedded document: {$bit: {field: {and/or/xor: #}}`,
        );
      const operations = Object.entries(operand).map(([name, value]) => {
        if (name !== 'and' && name !== 'or' && name !== 'xor') {
          throw new CommandError(
            ErrorCode.BadValue,
            `The $bit modifier only supports 'and', 'or', and 'xor', not '${name}' which is an unknown operator: {${name}: ${formatValue(value)}}`,
          );
        }
        const type = typeName(value);
        if (type !== 'int' && type !== 'long') {
          throw new CommandError(
            ErrorCode.BadValue,
            `The $bit modifier field must be an Integer(32/64 bit); a '${type}' is not supported here: {${name}: ${formatValue(value)}}`,
          );
        }
        return [name, value] as const;
      });
      if (operations.length === 0)
        throw new CommandError(
          ErrorCode.BadValue,
          `You must pass in at least one bitwise operation. The format is: {$bit: {field: {and/or/xor: #}}`,
        );
      leaf.prepared = operations;
      return;
    }
    case '$push':
    case '$addToSet': {
      const modifiers = isPlainObject(operand) && '$each' in operand;
      if (!modifiers) {
        leaf.prepared = { each: [operand] } satisfies PushModifiers;
        return;
      }
      const spec = operand as Document;
      if (!Array.isArray(spec.$each)) {
        throw new CommandError(
          ErrorCode.BadValue,
          `The argument to $each in ${operator} must be an array but it was of type: ${typeName(spec.$each)}`,
        );
      }
      const prepared: PushModifiers = { each: spec.$each };
      for (const [key, value] of Object.entries(spec)) {
        if (key === '$each') continue;
        if (operator === '$addToSet')
          throw new CommandError(ErrorCode.BadValue, `Found unexpected fields after $each in $addToSet: ${formatDocument(spec)}`);
        if (!PUSH_MODIFIERS.has(key)) throw new CommandError(ErrorCode.BadValue, `Unrecognized clause in $push: ${key}`);
        if (key === '$slice')
          prepared.slice = integerArgument(value, `The value for $slice must be an integer value but was given type: ${typeName(value)}`);
        if (key === '$position')
          prepared.position = integerArgument(value, `The value for $position must be an integer value, not of type: ${typeName(value)}`);
        if (key === '$sort') prepared.sort = pushSortSpec(value);
      }
      leaf.prepared = prepared;
      return;
    }
    default:
      return;
  }
}

function pushSortSpec(value: unknown): 1 | -1 | Document {
  if (isNumber(value) && (numberOf(value) === 1 || numberOf(value) === -1)) return numberOf(value) as 1 | -1;
  if (!isPlainObject(value))
    throw new CommandError(
      ErrorCode.BadValue,
      'The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort embedded fields',
    );
  if (Object.keys(value).length === 0)
    throw new CommandError(ErrorCode.BadValue, 'The $sort pattern is empty when it should be a set of fields.');
  for (const [field, direction] of Object.entries(value)) {
    if (!isNumber(direction) || (numberOf(direction) !== 1 && numberOf(direction) !== -1)) {
      throw new CommandError(ErrorCode.BadValue, `The $sort element value must be either 1 or -1`);
    }
    if (field.length === 0 || field.startsWith('$'))
      throw new CommandError(ErrorCode.BadValue, `The $sort field is a special identifier, which is not allowed: ${field}`);
  }
  return value;
}

/**
 * `$pull`'s condition: operators test each element as a value, a plain
 * document (or `$or`/`$and`) tests elements that are documents as a query,
 * anything else is equality.
 */
function pullCondition(condition: unknown, context: MatchContext): (element: unknown) => boolean {
  const logical =
    isPlainObject(condition) &&
    ['$and', '$or', '$nor', '$expr', '$where', '$text', '$jsonSchema', '$comment'].includes(Object.keys(condition)[0] ?? '');
  if (isOperatorDocument(condition) && !logical) return compileValueCondition(condition, context);
  if (isPlainObject(condition)) {
    const query = compileFilter(condition, context);
    return (element) => isDocument(element) && query.test(element);
  }
  return compileValueCondition(condition, context);
}

function checkPipeline(pipeline: Document[]): Document[] {
  const allowed = new Set(['$addFields', '$set', '$project', '$unset', '$replaceRoot', '$replaceWith']);
  for (const stage of pipeline) {
    const name = isPlainObject(stage) ? Object.keys(stage)[0] : undefined;
    if (!name || !allowed.has(name)) {
      throw new CommandError(ErrorCode.InvalidOptions, `${name ?? 'A non-object stage'} is not allowed to be used within an update`);
    }
  }
  return pipeline;
}
