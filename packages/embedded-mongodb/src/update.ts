import { BSON, Double, Int32, Long, ObjectId, type Document } from 'bson';
import { updateOne } from 'mingo';
import type { Modifier, PipelineStage } from 'mingo/updater';
import { MingoError } from 'mingo/util';
import { CommandError, ErrorCode } from './errors.js';
import { MINGO_OPTIONS } from './matching.js';
import { asBuffer, MAX_BSON_OBJECT_SIZE } from './raw-bson.js';
import { bsonTypeOf, compareValues, formatDocument, isPlainObject, promoted, typed } from './values.js';

const OPERATORS = new Set([
  '$set', '$unset', '$inc', '$mul', '$min', '$max', '$rename', '$push', '$pull', '$addToSet',
  '$pop', '$pullAll', '$bit', '$currentDate', '$setOnInsert',
]);
const NUMERIC_OPERATORS = new Set(['$inc', '$mul']);
const ARRAY_OPERATORS = new Set(['$push', '$addToSet', '$pull', '$pop', '$pullAll']);

/**
 * One update statement, in both views: `update` (promoted) is what mingo
 * applies; `typedUpdate` tells which BSON number types the written values had.
 */
export interface UpdateStatement {
  filter: Document;
  typedFilter: Document;
  update: Document | Document[];
  typedUpdate: Document | Document[];
  arrayFilters?: Document[];
}

export interface UpdatedDocument {
  raw: Buffer;
  doc: Document;
}

type UpdateKind = 'operators' | 'replacement' | 'pipeline';

export function updateKind(update: unknown): UpdateKind {
  if (Array.isArray(update)) return 'pipeline';
  if (!isPlainObject(update)) throw new CommandError(ErrorCode.FailedToParse, 'Update argument must be either an object or an array');
  const keys = Object.keys(update);
  const operators = keys.filter((k) => k.startsWith('$'));
  if (operators.length === 0) return 'replacement';
  for (const key of keys) {
    if (!OPERATORS.has(key)) {
      throw new CommandError(
        ErrorCode.FailedToParse,
        `Unknown modifier: ${key}. Expected a valid update modifier or pipeline-style update specified as an array`,
      );
    }
    if (!isPlainObject(update[key])) {
      throw new CommandError(
        ErrorCode.FailedToParse,
        `Modifiers operate on fields but we found type ${Array.isArray(update[key]) ? 'array' : typeof update[key]} instead. For example: {$mod: {<field>: ...}} not {${key}: ${JSON.stringify(update[key])}}`,
      );
    }
  }
  return 'operators';
}

/** Applies a statement to a stored document; undefined when nothing changed. `doc` is consumed. */
export function updateDocument(statement: UpdateStatement, raw: Buffer, doc: Document): UpdatedDocument | undefined {
  const kind = updateKind(statement.update);
  const id: unknown = doc._id;
  if (kind === 'replacement') {
    const replacement = statement.typedUpdate as Document;
    if ('_id' in replacement && compareValues((statement.update as Document)._id, id) !== 0) {
      throw immutableId();
    }
    const { _id: _ignored, ...rest } = replacement;
    const next = encode({ _id: typed(raw)._id, ...rest });
    return next.equals(raw) ? undefined : { raw: next, doc: promoted(next) };
  }
  const result =
    kind === 'pipeline'
      ? applyPipeline(doc, statement.update as Document[])
      : applyOperators(doc, statement, false);
  if (!result) return undefined;
  if (compareValues(result._id, id) !== 0) throw immutableId();
  const hints = typed(raw);
  if (kind === 'operators') overlayHints(hints, statement.typedUpdate as Document, false);
  const next = encode(restoreTypes(idFirst(result), hints) as Document);
  return { raw: next, doc: promoted(next) };
}

/** The document an upsert inserts when nothing matched. */
export function upsertDocument(statement: UpdateStatement): UpdatedDocument {
  const kind = updateKind(statement.update);
  const seed = seedFromFilter(statement.filter);
  const typedSeed = seedFromFilter(statement.typedFilter);
  if (kind === 'replacement') {
    const { _id, ...rest } = statement.typedUpdate as Document;
    const next = encode({ _id: _id ?? typedSeed._id ?? new ObjectId(), ...rest });
    return { raw: next, doc: promoted(next) };
  }
  let doc: Document = seed;
  if (kind === 'pipeline') {
    doc = applyPipeline(seed, statement.update as Document[]) ?? seed;
  } else {
    applyOperators(seed, statement, true);
    overlayHints(typedSeed, statement.typedUpdate as Document, true);
  }
  if (doc._id === undefined) doc._id = new ObjectId();
  const next = encode(restoreTypes(idFirst(doc), typedSeed) as Document);
  return { raw: next, doc: promoted(next) };
}

function immutableId(): CommandError {
  return new CommandError(ErrorCode.ImmutableField, "Performing an update on the path '_id' would modify the immutable field '_id'");
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

/** Runs update operators in place; the document when it changed. */
function applyOperators(doc: Document, statement: UpdateStatement, inserting: boolean): Document | undefined {
  const { $setOnInsert, ...modifier } = statement.update as Document;
  if (inserting && isPlainObject($setOnInsert)) {
    const set = isPlainObject(modifier.$set) ? modifier.$set : {};
    const clash = Object.keys($setOnInsert).find((path) => path in set);
    if (clash) {
      throw new CommandError(ErrorCode.ConflictingUpdateOperators, `Updating the path '${clash}' would create a conflict at '${clash}'`);
    }
    modifier.$set = { ...set, ...$setOnInsert };
  }
  if (Object.keys(modifier).length === 0) return undefined;
  checkOperandTypes(doc, modifier);
  const positional = Object.values(modifier).some((paths) =>
    Object.keys(paths as Document).some((path) => /(^|\.)\$(\.|$)/.test(path)),
  );
  const condition = positional && !inserting ? statement.filter : {};
  try {
    const result = updateOne([doc], condition, modifier as Modifier<Document>, { arrayFilters: statement.arrayFilters }, MINGO_OPTIONS);
    return result.modifiedCount > 0 ? doc : undefined;
  } catch (error) {
    throw withServerCode(error);
  }
}

/** Gives mingo's refusals the codes MongoDB uses for them. */
function withServerCode(error: unknown): unknown {
  if (!(error instanceof MingoError)) return error;
  if (/would create a conflict/.test(error.message)) {
    return new CommandError(ErrorCode.ConflictingUpdateOperators, error.message.replace(/^updating/, 'Updating'));
  }
  if (/immutable field/.test(error.message)) return new CommandError(ErrorCode.ImmutableField, error.message);
  return error;
}

/** Runs a pipeline-style update; the new document when it changed. */
function applyPipeline(doc: Document, pipeline: Document[]): Document | undefined {
  const docs = [doc];
  const result = updateOne(docs, {}, pipeline as PipelineStage[], {}, MINGO_OPTIONS);
  return result.modifiedCount > 0 ? docs[0] : undefined;
}

/** mingo skips operators whose target has the wrong type; MongoDB refuses the update. */
function checkOperandTypes(doc: Document, modifier: Document): void {
  for (const [op, paths] of Object.entries(modifier)) {
    const numeric = NUMERIC_OPERATORS.has(op);
    if (!numeric && !ARRAY_OPERATORS.has(op)) continue;
    for (const path of Object.keys(paths as Document)) {
      if (path.includes('$')) continue;
      const current = plainPath(doc, path);
      if (current === undefined) continue;
      if (numeric && typeof current !== 'number' && !isBsonNumber(current)) {
        throw new CommandError(
          ErrorCode.TypeMismatch,
          `Cannot apply ${op} to a value of non-numeric type. ${formatDocument({ _id: doc._id })} has the field '${path}' of non-numeric type ${typeName(current)}`,
        );
      }
      if (!numeric && !Array.isArray(current)) {
        throw new CommandError(
          ErrorCode.BadValue,
          `The field '${path}' must be an array but is of type ${typeName(current)} in document ${formatDocument({ _id: doc._id })}`,
        );
      }
    }
  }
}

function plainPath(doc: Document, path: string): unknown {
  let value: unknown = doc;
  for (const segment of path.split('.')) {
    if (Array.isArray(value) && /^\d+$/.test(segment)) value = value[Number(segment)];
    else if (isPlainObject(value)) value = value[segment];
    else return undefined;
  }
  return value;
}

function isBsonNumber(value: unknown): boolean {
  const t = bsonTypeOf(value);
  return t === 'Long' || t === 'Int32' || t === 'Double' || t === 'Decimal128';
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'object') return bsonTypeOf(value)?.toLowerCase() ?? (value instanceof Date ? 'date' : 'object');
  return typeof value === 'number' ? 'double' : typeof value === 'boolean' ? 'bool' : typeof value;
}

/** The fields an upsert copies from the filter's equality conditions. */
function seedFromFilter(filter: Document): Document {
  const seed: Document = {};
  const visit = (clause: Document): void => {
    for (const [key, value] of Object.entries(clause)) {
      if (key === '$and' && Array.isArray(value)) {
        for (const part of value) if (isPlainObject(part)) visit(part);
        continue;
      }
      if (key.startsWith('$')) continue;
      const isOperators = isPlainObject(value) && Object.keys(value)[0]?.startsWith('$') === true;
      if (!isOperators) setPath(seed, key, value);
      else if ('$eq' in (value as Document)) setPath(seed, key, (value as Document).$eq);
    }
  };
  visit(filter);
  return idFirst(seed);
}

function setPath(root: Document, path: string, value: unknown): void {
  const segments = path.split('.');
  let node: unknown = root;
  for (let i = 0; i < segments.length - 1; i++) {
    const segment = segments[i]!;
    const container = node as Record<string, unknown>;
    if (container[segment] === undefined) container[segment] = {};
    node = container[segment];
    if (node === null || typeof node !== 'object') return;
  }
  (node as Record<string, unknown>)[segments[segments.length - 1]!] = value;
}

const NUMBER_WIDTH: Record<string, number> = { Int32: 1, Long: 2, Double: 3 };
const NUMBER_OF_WIDTH: Record<number, () => unknown> = {
  1: () => new Int32(0),
  2: () => Long.fromNumber(0),
  3: () => new Double(0),
};

/** Records which BSON number type the update writes at each plain path it names. */
function overlayHints(hints: Document, typedUpdate: Document, inserting: boolean): void {
  for (const [op, paths] of Object.entries(typedUpdate)) {
    const assigns = op === '$set' || (op === '$setOnInsert' && inserting);
    const arithmetic = NUMERIC_OPERATORS.has(op);
    if ((!assigns && !arithmetic) || !isPlainObject(paths)) continue;
    for (const [path, value] of Object.entries(paths)) {
      if (path.includes('$')) continue;
      if (assigns) {
        setPath(hints, path, value);
        continue;
      }
      const width = Math.max(NUMBER_WIDTH[bsonTypeOf(plainPath(hints, path)) ?? ''] ?? 1, NUMBER_WIDTH[bsonTypeOf(value) ?? ''] ?? 1);
      setPath(hints, path, NUMBER_OF_WIDTH[width]!());
    }
  }
}

/**
 * Gives the numbers of an updated (promoted) document back the BSON type the
 * stored or written value had at the same place: a double stays a double, an
 * int64 an int64, and an int32 that outgrows 32 bits becomes an int64.
 */
function restoreTypes(value: unknown, hint: unknown): unknown {
  if (typeof value === 'number') {
    switch (bsonTypeOf(hint)) {
      case 'Long':
        return Number.isInteger(value) ? Long.fromNumber(value) : value;
      case 'Double':
        return new Double(value);
      case 'Int32':
        return Number.isInteger(value) && (value > 2147483647 || value < -2147483648) ? Long.fromNumber(value) : value;
      default:
        return value;
    }
  }
  if (Array.isArray(value)) {
    const hints = Array.isArray(hint) && hint.length <= value.length ? hint : [];
    return value.map((v, i) => restoreTypes(v, hints[i]));
  }
  if (isPlainObject(value)) {
    const hints = isPlainObject(hint) ? hint : {};
    const out: Document = {};
    for (const [k, v] of Object.entries(value)) out[k] = restoreTypes(v, hints[k]);
    return out;
  }
  return value;
}
