import { BSON, type Document } from 'bson';
import { Aggregator } from 'mingo/aggregator';

import { deepCopy, getField, hasField, removeField, setField } from './documents.js';
import { CommandError, ErrorCode, refusal } from './errors.js';
import { compileFilter, compileValueCondition, type MatchContext, MINGO_OPTIONS } from './matcher.js';
import { asBuffer, documentFromElements, rawElements } from './raw-bson.js';
import { isDocument, isNumber, isPlainObject, numberOf, promote, typed } from './values.js';

export type Projector = (raw: Buffer) => Buffer;

type Leaf =
  | { kind: 'include' }
  | { kind: 'exclude' }
  | { kind: 'slice'; skip: number | undefined; limit: number }
  | { kind: 'elemMatch'; test: (element: unknown) => boolean }
  | { kind: 'positional'; field: string }
  | { kind: 'expression'; expression: unknown };

interface Node {
  children: Map<string, Node | Leaf>;
}

const isNode = (value: Node | Leaf): value is Node => 'children' in value;

/**
 * Compiles a find projection with MongoDB's rules: inclusion or exclusion
 * (never both, `_id` aside), dotted paths through arrays, `$slice` (which keeps
 * the other fields), `$elemMatch`, the positional `$` and expressions. A
 * projection of top-level fields only copies stored elements byte for byte.
 */
export function compileProjection(spec: unknown, filter: Document, context: MatchContext = {}): Projector | undefined {
  if (spec === undefined || spec === null) return undefined;
  if (!isPlainObject(spec)) throw new CommandError(ErrorCode.TypeMismatch, 'Expected field projection to be of type object');
  if (Object.keys(spec).length === 0) return undefined;
  const simple = topLevelProjector(spec);
  if (simple) return simple;
  const projection = flatten(spec);

  const root: Node = { children: new Map() };
  let inclusion: boolean | undefined;
  let keepId = true;
  const decide = (field: string, include: boolean): void => {
    if (field === '_id') return;
    if (inclusion === undefined) inclusion = include;
    else if (inclusion !== include) {
      throw new CommandError(
        include ? 31253 : ErrorCode.Location31254,
        include
          ? `Cannot do inclusion on field ${field} in exclusion projection`
          : `Cannot do exclusion on field ${field} in inclusion projection`,
      );
    }
  };

  for (const [field, value] of Object.entries(projection)) {
    if (field.startsWith('$'))
      throw new CommandError(ErrorCode.BadValue, `FieldPath field names may not start with '$'. Consider using $getField or $setField.`);
    let path = field;
    let leaf: Leaf;
    if (field.endsWith('.$')) {
      path = field.slice(0, -2);
      leaf = { kind: 'positional', field: path };
      decide(path, true);
    } else if (isPlainObject(value) && Object.keys(value)[0]?.startsWith('$')) {
      leaf = operatorLeaf(path, value, context);
      if (leaf.kind !== 'slice') decide(path, true);
    } else if (typeof value === 'boolean' || isNumber(value)) {
      const include = typeof value === 'boolean' ? value : numberOf(value) !== 0;
      leaf = { kind: include ? 'include' : 'exclude' };
      if (path === '_id') keepId = include;
      decide(path, include);
    } else {
      leaf = { kind: 'expression', expression: value };
      decide(path, true);
    }
    insert(root, path, leaf, field);
  }

  // Only `$slice` (and `_id`): the other fields stay, as in an exclusion.
  const sliceOnly = [...walkLeaves(root)].some((leaf) => leaf.kind === 'slice');
  const mode = inclusion ?? (sliceOnly ? false : keepId);

  const positional = [...walkLeaves(root)].find((leaf) => leaf.kind === 'positional') as Extract<Leaf, { kind: 'positional' }> | undefined;
  const positionalTest = positional ? positionalCondition(filter, positional.field, context) : undefined;
  return (raw) => {
    const doc = typed(raw);
    const out = mode ? include(doc, root, doc, positionalTest) : exclude(doc, root);
    if (!keepId) removeField(out, '_id');
    else if (mode && hasField(doc, '_id')) return encode(moveIdFirst(out, doc._id));
    return encode(out);
  };
}

/**
 * A projection of top-level fields by 1/0 only (by far the most common): it
 * copies the kept elements of the stored bytes as they are.
 */
function topLevelProjector(spec: Document): Projector | undefined {
  const entries = Object.entries(spec);
  if (!entries.every(([field, v]) => !field.includes('.') && !field.startsWith('$') && (typeof v === 'boolean' || isNumber(v))))
    return undefined;
  const include = (v: unknown): boolean => (typeof v === 'boolean' ? v : numberOf(v) !== 0);
  const others = entries.filter(([field]) => field !== '_id');
  if (others.length > 0 && !others.every(([, v]) => include(v) === include(others[0]![1]))) return undefined; // mixed: refused below
  const keepId = spec._id === undefined || include(spec._id);
  const inclusion = others.length > 0 ? include(others[0]![1]) : keepId;
  const fields = new Set(others.map(([field]) => field));
  return (raw) =>
    documentFromElements(
      raw,
      rawElements(raw).filter((e) => (e.name === '_id' ? keepId : inclusion === fields.has(e.name))),
    );
}

/** `{a: {b: 1}}` is the projection `{'a.b': 1}`. */
function flatten(projection: Document, prefix = ''): Document {
  const out: Document = {};
  for (const [field, value] of Object.entries(projection)) {
    const nested = isPlainObject(value) && Object.keys(value).length > 0 && !Object.keys(value)[0]!.startsWith('$');
    if (nested && !field.startsWith('$')) Object.assign(out, flatten(value, `${prefix}${field}.`));
    else out[`${prefix}${field}`] = value;
  }
  return out;
}

function encode(doc: Document): Buffer {
  return asBuffer(BSON.serialize(doc));
}

function moveIdFirst(doc: Document, id: unknown): Document {
  const out: Document = { _id: id };
  for (const [name, value] of Object.entries(doc)) if (name !== '_id') setField(out, name, value);
  return out;
}

function operatorLeaf(path: string, spec: Document, context: MatchContext): Leaf {
  const [operator, argument] = Object.entries(spec)[0]!;
  switch (operator) {
    case '$slice': {
      if (isNumber(argument)) return { kind: 'slice', skip: undefined, limit: numberOf(argument) };
      if (Array.isArray(argument) && argument.length === 2 && argument.every(isNumber)) {
        const limit = numberOf(argument[1]);
        if (limit <= 0) throw new CommandError(28724, 'First argument to $slice must be an array, and the limit must be positive');
        return { kind: 'slice', skip: numberOf(argument[0]), limit };
      }
      // Anything else is the aggregation operator $slice.
      return { kind: 'expression', expression: spec };
    }
    case '$elemMatch': {
      if (path.includes('.')) throw new CommandError(31275, 'Cannot use $elemMatch projection on a nested field.');
      if (!isPlainObject(argument)) throw new CommandError(ErrorCode.BadValue, 'elemMatch: Invalid argument, object required.');
      const condition = compileValueCondition({ $elemMatch: argument }, context);
      return { kind: 'elemMatch', test: (element) => condition([element]) };
    }
    case '$meta':
      throw refusal(ErrorCode.BadValue, `$meta projection ('${String(argument)}')`);
    default:
      return { kind: 'expression', expression: spec };
  }
}

function insert(root: Node, path: string, leaf: Leaf, field: string): void {
  const parts = path.split('.');
  let node = root;
  for (let i = 0; i < parts.length - 1; i++) {
    const child = node.children.get(parts[i]!);
    if (child && !isNode(child)) throw collision(field, parts.slice(i + 1).join('.'));
    if (child) node = child;
    else {
      const created: Node = { children: new Map() };
      node.children.set(parts[i]!, created);
      node = created;
    }
  }
  const last = parts[parts.length - 1]!;
  if (node.children.has(last)) throw collision(field, last);
  node.children.set(last, leaf);
}

function collision(field: string, remaining: string): CommandError {
  return new CommandError(31250, `Path collision at ${field} remaining portion ${remaining}`);
}

function* walkLeaves(node: Node): Generator<Leaf> {
  for (const child of node.children.values()) {
    if (isNode(child)) yield* walkLeaves(child);
    else yield child;
  }
}

/** The query's conditions on the array a positional projection names, tested on one element. */
function positionalCondition(filter: Document, field: string, context: MatchContext): (element: unknown) => boolean {
  const conditions = Object.entries(filter).filter(([key]) => key === field || key.startsWith(`${field}.`));
  if (conditions.length === 0) {
    throw new CommandError(
      51050,
      `Executor error during find command :: caused by :: positional operator '${field}.$' couldn't find a matching element in the array`,
    );
  }
  const matcher = compileFilter(Object.fromEntries(conditions), context);
  const parts = field.split('.');
  return (element) => {
    const probe: Document = {};
    let node = probe;
    parts.forEach((part, i) => {
      if (i === parts.length - 1) setField(node, part, [element]);
      else {
        const next: Document = {};
        setField(node, part, next);
        node = next;
      }
    });
    return matcher.test(probe);
  };
}

function applySlice(value: unknown, leaf: Extract<Leaf, { kind: 'slice' }>): unknown {
  if (!Array.isArray(value)) return value;
  if (leaf.skip === undefined) return leaf.limit >= 0 ? value.slice(0, leaf.limit) : value.slice(Math.max(0, value.length + leaf.limit));
  const start = leaf.skip >= 0 ? Math.min(leaf.skip, value.length) : Math.max(0, value.length + leaf.skip);
  return value.slice(start, start + leaf.limit);
}

function evaluate(expression: unknown, root: Document): unknown {
  const [result] = new Aggregator([{ $project: { value: promote(expression) } }], MINGO_OPTIONS).run([
    promote(root) as Document,
  ]) as Document[];
  return result?.value;
}

function include(doc: Document, node: Node, root: Document, positional: ((e: unknown) => boolean) | undefined): Document {
  const out: Document = {};
  for (const [name, value] of Object.entries(doc)) {
    const spec = node.children.get(name);
    if (!spec) continue;
    if (isNode(spec)) {
      const projected = includeValue(value, spec, root, positional);
      if (projected !== undefined) setField(out, name, projected);
      continue;
    }
    switch (spec.kind) {
      case 'include':
        setField(out, name, value);
        break;
      case 'slice':
        setField(out, name, applySlice(value, spec));
        break;
      case 'elemMatch': {
        if (!Array.isArray(value)) break;
        const found = value.find(spec.test);
        if (found !== undefined) setField(out, name, [found]);
        break;
      }
      case 'positional': {
        if (!Array.isArray(value)) {
          setField(out, name, value);
          break;
        }
        const found = value.find((element) => positional!(element));
        if (found === undefined) {
          throw new CommandError(
            51246,
            "Executor error during find command :: caused by :: positional operator '.$' couldn't find a matching element in the array",
          );
        }
        setField(out, name, [found]);
        break;
      }
      default:
        break;
    }
  }
  // Computed fields come after the included ones, in the order the projection names them.
  for (const [name, spec] of node.children) {
    if (!isNode(spec) && spec.kind === 'expression') setField(out, name, evaluate(spec.expression, root));
    else if (isNode(spec) && !hasField(doc, name) && hasExpressions(spec)) setField(out, name, include({}, spec, root, positional));
  }
  return out;
}

function hasExpressions(node: Node): boolean {
  return [...walkLeaves(node)].some((leaf) => leaf.kind === 'expression');
}

function includeValue(value: unknown, node: Node, root: Document, positional: ((e: unknown) => boolean) | undefined): unknown {
  if (isDocument(value)) return include(value, node, root, positional);
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const element of value) {
      const projected = includeValue(element, node, root, positional);
      if (projected !== undefined) out.push(projected);
    }
    return out;
  }
  return hasExpressions(node) ? include({}, node, root, positional) : undefined;
}

function exclude(doc: Document, node: Node): Document {
  const out = deepCopy(doc);
  excludeIn(out, node);
  return out;
}

function excludeIn(doc: Document, node: Node): void {
  for (const [name, spec] of node.children) {
    if (!hasField(doc, name)) continue;
    const value = getField(doc, name);
    if (isNode(spec)) {
      if (isPlainObject(value)) excludeIn(value, spec);
      else if (Array.isArray(value)) excludeInArray(value, spec);
      continue;
    }
    if (spec.kind === 'exclude') removeField(doc, name);
    else if (spec.kind === 'slice') setField(doc, name, applySlice(value, spec));
  }
}

function excludeInArray(array: unknown[], node: Node): void {
  for (const element of array) {
    if (isPlainObject(element)) excludeIn(element, node);
    else if (Array.isArray(element)) excludeInArray(element, node);
  }
}
