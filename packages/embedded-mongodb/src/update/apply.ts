import { BSON, type Document, Double, Int32, Long, ObjectId, Timestamp } from 'bson';
import { Aggregator } from 'mingo/aggregator';

import { deepCopy, getField, hasField, identical, removeField, setField } from '../documents.js';
import { CommandError, ErrorCode } from '../errors.js';
import { compileFilter, isOperatorDocument, MINGO_OPTIONS } from '../matcher.js';
import { addNumbers, multiplyNumbers } from '../numbers.js';
import type { UpdateDescription } from '../oplog.js';
import { asBuffer, MAX_BSON_OBJECT_SIZE } from '../raw-bson.js';
import {
  bsonTypeOf,
  compareValues,
  formatDocument,
  formatValue,
  isDocument,
  isNumber,
  isPlainObject,
  numberOf,
  promote,
  typed,
  typeName,
} from '../values.js';
import { ARRAY_FILTER_IDENTIFIER, type CompiledUpdate, type InternalNode, type LeafNode, type PushModifiers } from './parse.js';

// Applying a parsed update to documents, field by field in MongoDB's order.

export interface UpdatedDocument {
  raw: Buffer;
  doc: Document;
  /** Update operators: the paths they wrote and removed, for change streams. */
  description?: UpdateDescription;
}

interface ApplyState {
  doc: Document;
  inserting: boolean;
  /** The element index the query matched in the array a positional `$` names (computed on demand). */
  positional: (arrayPath: string[], array: unknown[]) => number;
  modified: boolean;
  now: Date;
  /** Paths written and removed, as MongoDB's oplog records them. */
  log: UpdateDescription;
}

/** Applies a compiled update to a stored document; undefined when nothing changed. */
export function updateDocument(update: CompiledUpdate, raw: Buffer, doc: Document, now: Date): UpdatedDocument | undefined {
  switch (update.kind) {
    case 'replacement': {
      const next = replaceDocument(doc, update.replacement);
      const encoded = encode(next);
      return encoded.equals(raw) ? undefined : { raw: encoded, doc: next };
    }
    case 'pipeline': {
      const next = runPipeline(doc, update);
      if (!('_id' in next)) next._id = doc._id;
      checkIdUnchanged(doc._id, next._id);
      const encoded = encode(idFirst(next));
      return encoded.equals(raw) ? undefined : { raw: encoded, doc: typed(encoded) };
    }
    case 'operators': {
      const originalId = deepCopy(doc._id);
      const state: ApplyState = {
        doc,
        inserting: false,
        positional: positionalResolver(update),
        modified: false,
        now,
        log: { updated: [], removed: [] },
      };
      applyNode(update, update.tree, [], state);
      if (!state.modified) return undefined;
      if (!identical(doc._id, originalId)) throw immutableId('_id');
      checkStorage(doc, false);
      const encoded = encode(doc);
      return { raw: encoded, doc, description: state.log };
    }
  }
}

/** The document an upsert inserts when nothing matched. */
export function upsertDocument(update: CompiledUpdate, filter: Document, now: Date): UpdatedDocument {
  let doc: Document;
  switch (update.kind) {
    case 'replacement': {
      const seed = seedFromFilter(filter);
      doc =
        '_id' in update.replacement || !('_id' in seed) ? deepCopy(update.replacement) : { _id: seed._id, ...deepCopy(update.replacement) };
      break;
    }
    case 'pipeline':
      doc = runPipeline(seedFromFilter(filter), update);
      break;
    case 'operators': {
      doc = seedFromFilter(filter);
      const seededId = doc._id;
      const state: ApplyState = {
        doc,
        inserting: true,
        positional: () => {
          throw new CommandError(ErrorCode.BadValue, 'The positional operator did not find the match needed from the query.');
        },
        modified: false,
        now,
        log: { updated: [], removed: [] },
      };
      applyNode(update, update.tree, [], state);
      if (seededId !== undefined && !identical(doc._id, seededId)) throw immutableId('_id');
      break;
    }
  }
  if (!('_id' in doc)) doc = { _id: new ObjectId(), ...doc };
  const ready = idFirst(doc);
  checkStorage(ready, true);
  const encoded = encode(ready);
  return { raw: encoded, doc: typed(encoded) };
}

function replaceDocument(original: Document, replacement: Document): Document {
  if ('_id' in replacement && !identicalId(replacement._id, original._id)) {
    throw new CommandError(
      ErrorCode.ImmutableField,
      `After applying the update, the (immutable) field '_id' was found to have been altered to _id: ${formatValue(replacement._id)}`,
    );
  }
  const { _id: _ignored, ...rest } = deepCopy(replacement);
  const next = { _id: original._id, ...rest };
  checkStorage(next, false);
  return next;
}

/** `_id` values are compared as MongoDB compares them (1 and 1.0 are the same `_id`). */
function identicalId(a: unknown, b: unknown): boolean {
  return compareValues(a, b) === 0;
}

function checkIdUnchanged(before: unknown, after: unknown): void {
  if (!identicalId(before, after)) {
    throw new CommandError(
      ErrorCode.ImmutableField,
      `After applying the update, the (immutable) field '_id' was found to have been altered to _id: ${formatValue(after)}`,
    );
  }
}

function immutableId(path: string): CommandError {
  return new CommandError(ErrorCode.ImmutableField, `Performing an update on the path '${path}' would modify the immutable field '_id'`);
}

function runPipeline(doc: Document, update: Extract<CompiledUpdate, { kind: 'pipeline' }>): Document {
  const aggregator = new Aggregator(
    update.pipeline.map((stage) => promote(stage) as Document),
    { ...MINGO_OPTIONS, variables: update.variables ? (promote(update.variables) as Document) : undefined },
  );
  const [result] = aggregator.run([promote(doc) as Document]) as Document[];
  return restoreTypes(result ?? {}, doc) as Document;
}

/** Values a pipeline left as they were get back their BSON number type (mingo works on JS numbers). */
function restoreTypes(value: unknown, original: unknown): unknown {
  if (original !== undefined && compareValues(promote(original), value) === 0 && typeName(promote(original)) === typeName(value))
    return original;
  if (Array.isArray(value)) return value.map((v, i) => restoreTypes(v, Array.isArray(original) ? original[i] : undefined));
  if (isPlainObject(value)) {
    const out: Document = {};
    for (const [k, v] of Object.entries(value))
      setField(out, k, restoreTypes(v, isPlainObject(original) ? getField(original, k) : undefined));
    return out;
  }
  return value;
}

function encode(doc: Document): Buffer {
  const raw = asBuffer(BSON.serialize(doc));
  if (raw.length > MAX_BSON_OBJECT_SIZE) {
    throw new CommandError(17419, `Resulting document after update is larger than ${MAX_BSON_OBJECT_SIZE}`);
  }
  return raw;
}

function idFirst(doc: Document): Document {
  if (Object.keys(doc)[0] === '_id' || !('_id' in doc)) return doc;
  const { _id, ...rest } = doc;
  return { _id, ...rest };
}

/**
 * What MongoDB checks before storing an updated document: `_id` of a storable
 * type without `$`-prefixed fields, and (except for documents an upsert
 * inserts) no `$`-prefixed top-level field other than a DBRef's.
 */
export function checkStorage(doc: Document, inserting: boolean): void {
  const id: unknown = doc._id;
  const idType = typeName(id);
  if (idType === 'array' || idType === 'regex' || idType === 'undefined') {
    throw new CommandError(ErrorCode.InvalidIdField, `The '_id' value cannot be of type ${idType}`);
  }
  if (isDocument(id)) {
    const dollar = findDollarField(id, '_id');
    if (dollar) {
      throw new CommandError(
        ErrorCode.DollarPrefixedFieldName,
        `_id fields may not contain '$'-prefixed fields: The dollar ($) prefixed field '${dollar.name}' in '${dollar.path}' is not allowed in the context of an update's replacement document. Consider using an aggregation pipeline with $replaceWith.`,
      );
    }
  }
  if (inserting) return;
  for (const name of Object.keys(doc)) {
    if (name.startsWith('$') && !['$ref', '$id', '$db'].includes(name)) {
      throw new CommandError(
        ErrorCode.DollarPrefixedFieldName,
        `The dollar ($) prefixed field '${name}' in '${name}' is not allowed in the context of an update's replacement document. Consider using an aggregation pipeline with $replaceWith.`,
      );
    }
  }
}

function findDollarField(doc: Document, path: string): { name: string; path: string } | undefined {
  for (const [name, value] of Object.entries(doc)) {
    if (name.startsWith('$') && !['$ref', '$id', '$db'].includes(name)) return { name, path: `${path}.${name}` };
    if (isPlainObject(value)) {
      const nested = findDollarField(value, `${path}.${name}`);
      if (nested) return nested;
    }
  }
  return undefined;
}

/** The fields an upsert copies from the filter's equality conditions (`_id` first). */
function seedFromFilter(filter: Document): Document {
  const seed: Document = {};
  const visit = (clause: Document): void => {
    for (const [key, value] of Object.entries(clause)) {
      if (key === '$and' && Array.isArray(value)) {
        for (const part of value) if (isPlainObject(part)) visit(part);
        continue;
      }
      if (key.startsWith('$')) continue;
      let equal: unknown;
      if (!isOperatorDocument(value)) {
        if (bsonTypeOf(value) === 'BSONRegExp' || value instanceof RegExp) continue;
        equal = value;
      } else if (Object.keys(value).length === 1 && '$eq' in value) {
        equal = value.$eq;
      } else {
        continue;
      }
      createAt(seed, key.split('.'), deepCopy(equal));
    }
  };
  visit(filter);
  return idFirst(seed);
}

/** Applies the children of an internal node at `path`, in field-name order as MongoDB does. */
function applyNode(update: Extract<CompiledUpdate, { kind: 'operators' }>, node: InternalNode, path: string[], state: ApplyState): void {
  const names = [...node.children.keys()].sort();
  for (const name of names) {
    const child = node.children.get(name)!;
    for (const concrete of resolveChild(update, name, path, state)) {
      if (child.kind === 'internal') applyNode(update, child, concrete, state);
      else applyLeaf(child, concrete, state);
    }
  }
}

/** The concrete paths a child name stands for: itself, or array indexes for `$`, `$[]` and `$[id]`. */
function resolveChild(update: Extract<CompiledUpdate, { kind: 'operators' }>, name: string, path: string[], state: ApplyState): string[][] {
  if (name !== '$' && !ARRAY_FILTER_IDENTIFIER.test(name)) return [[...path, name]];
  const array = valueAt(state.doc, path);
  if (name === '$') {
    if (!Array.isArray(array))
      throw new CommandError(ErrorCode.BadValue, 'The positional operator did not find the match needed from the query.');
    return [[...path, String(state.positional(path, array))]];
  }
  if (array === undefined) {
    throw new CommandError(ErrorCode.BadValue, `The path '${path.join('.')}' must exist in the document in order to apply array updates.`);
  }
  if (!Array.isArray(array)) {
    throw new CommandError(
      ErrorCode.BadValue,
      `Cannot apply array updates to non-array element ${path[path.length - 1]}: ${formatValue(array)}`,
    );
  }
  const identifier = ARRAY_FILTER_IDENTIFIER.exec(name)![1]!;
  const filter = identifier === '' ? undefined : update.arrayFilters.get(identifier)!;
  const out: string[][] = [];
  array.forEach((element, i) => {
    if (!filter || filter(element)) out.push([...path, String(i)]);
  });
  return out;
}

/**
 * The positional `$` stands for the first element of the array that the
 * query's conditions on that array (or on fields inside its elements) match.
 */
function positionalResolver(update: Extract<CompiledUpdate, { kind: 'operators' }>): ApplyState['positional'] {
  return (arrayPath, array) => {
    const prefix = arrayPath.join('.');
    const conditions = relevantConditions(update.filter, prefix);
    if (conditions.length === 0) {
      throw new CommandError(ErrorCode.BadValue, 'The positional operator did not find the match needed from the query.');
    }
    const matcher = compileFilter({ $and: conditions }, update.context);
    const index = array.findIndex((element) => {
      const probe: Document = {};
      createAt(probe, arrayPath, [element]);
      return matcher.test(probe);
    });
    if (index < 0) {
      throw new CommandError(ErrorCode.BadValue, 'The positional operator did not find the match needed from the query.');
    }
    return index;
  };
}

function relevantConditions(filter: Document, prefix: string): Document[] {
  const out: Document[] = [];
  for (const [key, value] of Object.entries(filter)) {
    if (key === '$and' && Array.isArray(value)) {
      for (const part of value) if (isPlainObject(part)) out.push(...relevantConditions(part, prefix));
      continue;
    }
    if (key === prefix || key.startsWith(`${prefix}.`)) out.push({ [key]: value });
  }
  return out;
}

/** The value at a concrete path (array indexes as strings), undefined when missing. */
function valueAt(doc: Document, path: string[]): unknown {
  let value: unknown = doc;
  for (const part of path) {
    if (Array.isArray(value)) {
      if (!/^\d+$/.test(part)) return undefined;
      value = value[Number(part)];
    } else if (isDocument(value)) {
      value = getField(value, part);
    } else {
      return undefined;
    }
    if (value === undefined) return undefined;
  }
  return value;
}

/**
 * Writes `value` at a concrete path, creating missing documents on the way
 * (and padding arrays with nulls); refuses paths that cannot exist.
 */
function createAt(doc: Document, path: string[], value: unknown): void {
  let container: unknown = doc;
  for (let i = 0; i < path.length; i++) {
    const part = path[i]!;
    const last = i === path.length - 1;
    if (Array.isArray(container)) {
      if (!/^\d+$/.test(part)) {
        throw new CommandError(
          ErrorCode.PathNotViable,
          `Cannot create field '${part}' in element {${path[i - 1]}: ${formatValue(container)}}`,
        );
      }
      const index = Number(part);
      while (container.length < index) container.push(null);
      if (last) {
        container[index] = value;
        return;
      }
      if (container[index] === undefined || container[index] === null) {
        if (container[index] === null && index < container.length) {
          throw new CommandError(ErrorCode.PathNotViable, `Cannot create field '${path[i + 1]}' in element {${part}: null}`);
        }
        container[index] = {};
      }
      container = container[index];
      continue;
    }
    if (!isPlainObject(container)) {
      throw new CommandError(
        ErrorCode.PathNotViable,
        `Cannot create field '${part}' in element {${path[i - 1]}: ${formatValue(container)}}`,
      );
    }
    if (last) {
      setField(container, part, value);
      return;
    }
    if (!hasField(container, part)) setField(container, part, {});
    const next = getField(container, part);
    if (!isPlainObject(next) && !Array.isArray(next)) {
      throw new CommandError(ErrorCode.PathNotViable, `Cannot create field '${path[i + 1]}' in element {${part}: ${formatValue(next)}}`);
    }
    container = next;
  }
}

/** Removes the value at a concrete path: a field is deleted, an array element set to null. */
function unsetAt(doc: Document, path: string[]): boolean {
  const parent = valueAt(doc, path.slice(0, -1));
  const last = path[path.length - 1]!;
  if (Array.isArray(parent)) {
    if (!/^\d+$/.test(last) || Number(last) >= parent.length) return false;
    if (parent[Number(last)] === null) return false;
    parent[Number(last)] = null;
    return true;
  }
  if (!isPlainObject(parent) || !hasField(parent, last)) return false;
  removeField(parent, last);
  return true;
}

function set(state: ApplyState, path: string[], value: unknown): void {
  const current = valueAt(state.doc, path);
  if (current !== undefined && identical(current, value)) return;
  if (path[0] === '_id' && current !== undefined && !state.inserting) throw immutableId(path.join('.'));
  createAt(state.doc, path, value);
  written(state, path);
}

function written(state: ApplyState, path: string[]): void {
  state.modified = true;
  state.log.updated.push(path.join('.'));
}

function applyLeaf(leaf: LeafNode, path: string[], state: ApplyState): void {
  const current = valueAt(state.doc, path);
  const where = (): string => formatDocument({ _id: state.doc._id });
  switch (leaf.operator) {
    case '$setOnInsert':
      if (state.inserting) set(state, path, deepCopy(leaf.operand));
      return;
    case '$set':
      set(state, path, deepCopy(leaf.operand));
      return;
    case '$unset':
      if (current === undefined) return;
      if (path[0] === '_id' && !state.inserting) throw immutableId(path.join('.'));
      if (!unsetAt(state.doc, path)) return;
      state.modified = true;
      // An array element is set to null rather than removed.
      (Array.isArray(valueAt(state.doc, path.slice(0, -1))) ? state.log.updated : state.log.removed).push(path.join('.'));
      return;
    case '$inc':
    case '$mul': {
      if (current !== undefined && !isNumber(current)) {
        throw new CommandError(
          ErrorCode.TypeMismatch,
          `Cannot apply ${leaf.operator} to a value of non-numeric type. ${where()} has the field '${path[path.length - 1]}' of non-numeric type ${typeName(current)}`,
        );
      }
      const base = current ?? (leaf.operator === '$inc' ? new Int32(0) : zeroLike(leaf.operand));
      const result =
        leaf.operator === '$inc'
          ? addNumbers(base, leaf.operand)
          : multiplyNumbers(current === undefined ? zeroLike(leaf.operand) : base, leaf.operand);
      if (result === undefined) {
        throw new CommandError(
          ErrorCode.BadValue,
          `Failed to apply ${leaf.operator} operations to current value (${formatValue(current)}) for document ${where()}`,
        );
      }
      set(state, path, result);
      return;
    }
    case '$min':
    case '$max': {
      if (current !== undefined) {
        const c = compareValues(leaf.operand, current);
        if (leaf.operator === '$min' ? c >= 0 : c <= 0) return;
      }
      set(state, path, deepCopy(leaf.operand));
      return;
    }
    case '$currentDate': {
      const timestamp = isPlainObject(leaf.operand) && leaf.operand.$type === 'timestamp';
      const now = state.now;
      set(state, path, timestamp ? Timestamp.fromBits(0, Math.floor(now.getTime() / 1000)) : now);
      return;
    }
    case '$renameSource':
      return;
    case '$rename': {
      const from = leaf.operand as string;
      const sourcePath = from.split('.');
      const source = valueThroughDocuments(state.doc, sourcePath, from);
      if (source === undefined) return;
      valueThroughDocuments(state.doc, path, leaf.path);
      if (sourcePath[0] === '_id' || path[0] === '_id') throw immutableId(sourcePath[0] === '_id' ? from : leaf.path);
      unsetAt(state.doc, sourcePath);
      state.log.removed.push(from);
      createAt(state.doc, path, source);
      written(state, path);
      return;
    }
    case '$push':
    case '$addToSet': {
      if (current !== undefined && !Array.isArray(current)) {
        throw new CommandError(
          ErrorCode.BadValue,
          leaf.operator === '$push'
            ? `The field '${leaf.path}' must be an array but is of type ${typeName(current)} in document ${where()}`
            : `Cannot apply $addToSet to non-array field. Field named '${path[path.length - 1]}' has non-array type ${typeName(current)}`,
        );
      }
      const modifiers = leaf.prepared as PushModifiers;
      const array = current === undefined ? [] : [...(current as unknown[])];
      const items = modifiers.each.map(deepCopy);
      if (leaf.operator === '$addToSet') {
        for (const item of items) if (!array.some((existing) => equalForSets(existing, item))) array.push(item);
      } else {
        let at = modifiers.position ?? array.length;
        if (at < 0) at = Math.max(0, array.length + at);
        array.splice(Math.min(at, array.length), 0, ...items);
        if (modifiers.sort !== undefined) sortForPush(array, modifiers.sort);
        if (modifiers.slice !== undefined) {
          const kept = modifiers.slice >= 0 ? array.slice(0, modifiers.slice) : array.slice(Math.max(0, array.length + modifiers.slice));
          array.length = 0;
          array.push(...kept);
        }
      }
      if (current !== undefined && identical(current, array)) return;
      createAt(state.doc, path, array);
      const previous = current as unknown[] | undefined;
      const appendedOnly = previous !== undefined && previous.every((element, i) => identical(element, array[i]));
      if (!appendedOnly) written(state, path);
      else {
        state.modified = true;
        for (let i = previous.length; i < array.length; i++) state.log.updated.push([...path, String(i)].join('.'));
      }
      return;
    }
    case '$pop': {
      if (current === undefined) return;
      if (!Array.isArray(current)) {
        throw new CommandError(ErrorCode.TypeMismatch, `Path '${leaf.path}' contains an element of non-array type '${typeName(current)}'`);
      }
      if (current.length === 0) return;
      if (numberOf(leaf.operand) === 1) current.pop();
      else current.shift();
      written(state, path);
      return;
    }
    case '$pull':
    case '$pullAll': {
      if (current === undefined) return;
      if (!Array.isArray(current)) throw new CommandError(ErrorCode.BadValue, 'Cannot apply $pull to a non-array value');
      const remove =
        leaf.operator === '$pull'
          ? (leaf.prepared as (element: unknown) => boolean)
          : (element: unknown) => (leaf.operand as unknown[]).some((value) => equalForSets(element, value));
      const kept = current.filter((element) => !remove(element));
      if (kept.length === current.length) return;
      current.length = 0;
      current.push(...kept);
      written(state, path);
      return;
    }
    case '$bit': {
      const type = current === undefined ? 'int' : typeName(current);
      if (type !== 'int' && type !== 'long') {
        throw new CommandError(
          ErrorCode.BadValue,
          `Cannot apply $bit to a value of non-integral type.${where()} has the field ${path[path.length - 1]} of non-integer type ${type}`,
        );
      }
      let result: unknown = current ?? new Int32(0);
      for (const [name, operand] of leaf.prepared as [string, unknown][]) result = bitwise(name, result, operand);
      set(state, path, result);
      return;
    }
  }
}

/** A value on a path that must not cross arrays (`$rename`). */
function valueThroughDocuments(doc: Document, path: string[], written: string): unknown {
  let value: unknown = doc;
  for (let i = 0; i < path.length; i++) {
    if (Array.isArray(value)) {
      throw new CommandError(
        ErrorCode.BadValue,
        `The source field cannot be an array element, '${written}' in doc with ${path[i - 1]}: ${formatValue(value)} has an array field called '${path[i - 1]}'`,
      );
    }
    if (!isDocument(value)) return undefined;
    value = getField(value, path[i]!);
    if (value === undefined) return undefined;
  }
  return value;
}

/** `$addToSet` and `$pullAll` compare as the matcher does: 1 and 1.0 are the same element. */
function equalForSets(a: unknown, b: unknown): boolean {
  return compareValues(a, b) === 0;
}

function sortForPush(array: unknown[], sort: 1 | -1 | Document): void {
  if (sort === 1 || sort === -1) {
    array.sort((a, b) => compareValues(a, b) * (sort as number));
    return;
  }
  const keys = Object.entries(sort).map(([field, direction]) => [field.split('.'), numberOf(direction)] as const);
  array.sort((a, b) => {
    for (const [path, direction] of keys) {
      const c = compareValues(isDocument(a) ? (valueAt(a, path) ?? null) : null, isDocument(b) ? (valueAt(b, path) ?? null) : null);
      if (c !== 0) return c * direction;
    }
    return 0;
  });
}

function zeroLike(operand: unknown): unknown {
  switch (typeName(operand)) {
    case 'long':
      return Long.fromNumber(0);
    case 'double':
      return new Double(0);
    case 'decimal':
      return multiplyNumbers(operand, new Int32(0));
    default:
      return new Int32(0);
  }
}

function bitwise(name: string, current: unknown, operand: unknown): unknown {
  const long = typeName(current) === 'long' || typeName(operand) === 'long';
  const toBig = (v: unknown): bigint => (bsonTypeOf(v) === 'Long' ? (v as Long).toBigInt() : BigInt(numberOf(v)));
  const a = toBig(current);
  const b = toBig(operand);
  const result = name === 'and' ? a & b : name === 'or' ? a | b : a ^ b;
  return long ? Long.fromBigInt(BigInt.asIntN(64, result)) : new Int32(Number(BigInt.asIntN(32, result)));
}
