import { type Binary, BSON, type DBRef, type Document, type Long, type ObjectId } from 'bson';

import { CommandError, ErrorCode } from './errors.js';

/**
 * Two views of a stored document. The engine matches, sorts, indexes and
 * updates the typed view (int32, int64, double and decimal kept apart, as
 * MongoDB's `$type` and arithmetic need); mingo's expressions and computing
 * stages get the promoted view (plain JS numbers, see `promote`). What goes
 * back to clients comes from the typed view or the raw bytes.
 */
export const TYPED: BSON.DeserializeOptions = { promoteValues: false, bsonRegExp: true };

export function typed(raw: Uint8Array): Document {
  return BSON.deserialize(raw, TYPED);
}

/** A typed value in the promoted view, for mingo. */
export function promote(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(promote);
  if (isPlainObject(value)) {
    const out: Document = {};
    for (const [k, v] of Object.entries(value)) out[k] = promote(v);
    return out;
  }
  switch (bsonTypeOf(value)) {
    case 'Int32':
    case 'Double':
      return Number((value as { valueOf(): unknown }).valueOf());
    case 'Long': {
      const n = (value as Long).toNumber();
      return Number.isSafeInteger(n) ? n : value;
    }
    default:
      return value;
  }
}

/** The bson class of a value (`ObjectId`, `Long`, ...), undefined for plain JS values. */
export function bsonTypeOf(value: unknown): string | undefined {
  return typeof value === 'object' && value !== null ? (value as { _bsontype?: string })._bsontype : undefined;
}

/** A number of any BSON numeric type. */
export function isNumber(value: unknown): boolean {
  if (typeof value === 'number' || typeof value === 'bigint') return true;
  const type = bsonTypeOf(value);
  return type === 'Int32' || type === 'Double' || type === 'Long' || type === 'Decimal128';
}

/** A BSON number as a JS number (int64 beyond 2^53 and decimals lose precision). */
export function numberOf(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  if (bsonTypeOf(value) === 'Long') return (value as Long).toNumber();
  return Number(String((value as { valueOf(): unknown }).valueOf()));
}

/** An embedded document: a plain object or a DBRef (which bson decodes into its own class). */
export function isDocument(value: unknown): value is Document {
  return isPlainObject(value) || bsonTypeOf(value) === 'DBRef';
}

/** The fields of an embedded document in order, with a DBRef's `$ref`, `$id` and `$db` as stored. */
export function entriesOf(doc: Document): [string, unknown][] {
  if (bsonTypeOf(doc) !== 'DBRef') return Object.entries(doc);
  const ref = doc as DBRef;
  return [
    ['$ref', ref.collection],
    ['$id', ref.oid],
    ...(ref.db ? ([['$db', ref.db]] as [string, unknown][]) : []),
    ...Object.entries(ref.fields as Document),
  ];
}

/** One field of an embedded document (undefined when missing). */
export function fieldOf(doc: Document, name: string): unknown {
  if (bsonTypeOf(doc) !== 'DBRef') return Object.hasOwn(doc, name) ? doc[name] : undefined;
  return entriesOf(doc).find(([key]) => key === name)?.[1];
}

/** MongoDB's name for the BSON type of a value, as `$type` and error messages spell it. */
export function typeName(value: unknown): string {
  switch (typeof value) {
    case 'undefined':
      return 'missing';
    case 'string':
      return 'string';
    case 'boolean':
      return 'bool';
    case 'number':
      return Number.isInteger(value) && value >= -2147483648 && value <= 2147483647 ? 'int' : 'double';
    case 'bigint':
      return 'long';
    default:
      break;
  }
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (value instanceof Date) return 'date';
  if (value instanceof RegExp) return 'regex';
  if (value instanceof Uint8Array) return 'binData';
  switch (bsonTypeOf(value)) {
    case 'Int32':
      return 'int';
    case 'Double':
      return 'double';
    case 'Long':
      return 'long';
    case 'Decimal128':
      return 'decimal';
    case 'ObjectId':
      return 'objectId';
    case 'Binary':
      return 'binData';
    case 'Timestamp':
      return 'timestamp';
    case 'BSONRegExp':
      return 'regex';
    case 'BSONSymbol':
      return 'symbol';
    case 'Code':
      return (value as { scope?: unknown }).scope ? 'javascriptWithScope' : 'javascript';
    case 'MinKey':
      return 'minKey';
    case 'MaxKey':
      return 'maxKey';
    case 'DBPointer':
      return 'dbPointer';
    default:
      return 'object';
  }
}

/** A plain embedded document (not an array, not a BSON value class). */
export function isPlainObject(value: unknown): value is Document {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** The rank of a value's type in MongoDB's cross-type comparison order. */
export function typeRank(value: unknown): number {
  switch (typeof value) {
    case 'undefined':
      return 2;
    case 'number':
    case 'bigint':
      return 3;
    case 'string':
      return 4;
    case 'boolean':
      return 9;
    case 'object':
      break;
    default:
      return 13;
  }
  if (value === null) return 2;
  if (Array.isArray(value)) return 6;
  if (value instanceof Date) return 10;
  if (value instanceof RegExp) return 12;
  if (value instanceof Uint8Array) return 7;
  switch (bsonTypeOf(value)) {
    case 'MinKey':
      return 1;
    case 'Int32':
    case 'Double':
    case 'Long':
    case 'Decimal128':
      return 3;
    case 'BSONSymbol':
      return 4;
    case 'Binary':
      return 7;
    case 'ObjectId':
      return 8;
    case 'Timestamp':
      return 11;
    case 'BSONRegExp':
      return 12;
    case 'Code':
      return 13;
    case 'MaxKey':
      return 14;
    default:
      return 5;
  }
}

function numeric(value: unknown): number | bigint {
  if (typeof value === 'number' || typeof value === 'bigint') return value;
  const v = value as { _bsontype: string };
  switch (v._bsontype) {
    case 'Long': {
      const long = value as Long;
      const n = long.toNumber();
      return Number.isSafeInteger(n) ? n : BigInt(long.toString());
    }
    case 'Decimal128':
      return Number(String(value));
    default:
      return Number((value as { valueOf(): unknown }).valueOf());
  }
}

function cmp<T extends string | number | bigint | boolean>(a: T, b: T): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareNumbers(a: unknown, b: unknown): number {
  const x = numeric(a);
  const y = numeric(b);
  const xNaN = typeof x === 'number' && Number.isNaN(x);
  const yNaN = typeof y === 'number' && Number.isNaN(y);
  if (xNaN || yNaN) return xNaN && yNaN ? 0 : xNaN ? -1 : 1;
  return x < y ? -1 : x > y ? 1 : 0;
}

interface ObjectIdWords {
  i0?: number;
  i1: number;
  i2: number;
  i3: number;
}

function compareObjectIds(a: ObjectId, b: ObjectId): number {
  // bson 7 keeps an ObjectId as four 24-bit integers; comparing them avoids allocating bytes.
  const x = a as unknown as ObjectIdWords;
  const y = b as unknown as ObjectIdWords;
  if (x.i0 === undefined || y.i0 === undefined) return Buffer.compare(a.id, b.id);
  return Math.sign(x.i0 - y.i0 || x.i1 - y.i1 || x.i2 - y.i2 || x.i3 - y.i3);
}

function binaryParts(value: unknown): [number, Uint8Array] {
  if (value instanceof Uint8Array) return [0, value];
  const binary = value as Binary;
  return [binary.sub_type, binary.buffer.subarray(0, binary.position)];
}

function compareEntries(a: [string, unknown][], b: [string, unknown][]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const [ka, va] = a[i]!;
    const [kb, vb] = b[i]!;
    const byType = typeRank(va) - typeRank(vb);
    if (byType !== 0) return byType < 0 ? -1 : 1;
    const byName = cmp(ka, kb);
    if (byName !== 0) return byName;
    const byValue = compareValues(va, vb);
    if (byValue !== 0) return byValue;
  }
  return cmp(a.length, b.length);
}

/** Orders two BSON values the way MongoDB sorts and indexes them. */
export function compareValues(a: unknown, b: unknown): number {
  if (a === b) return 0;
  const ra = typeRank(a);
  const rb = typeRank(b);
  if (ra !== rb) return ra < rb ? -1 : 1;
  switch (ra) {
    case 3:
      return compareNumbers(a, b);
    case 4:
      return cmp(String(a), String(b));
    case 5:
      return compareEntries(entriesOf(a as Document), entriesOf(b as Document));
    case 6:
      return compareEntries(
        (a as unknown[]).map((v, i) => [String(i), v]),
        (b as unknown[]).map((v, i) => [String(i), v]),
      );
    case 7: {
      const [sa, ba] = binaryParts(a);
      const [sb, bb] = binaryParts(b);
      return cmp(ba.length, bb.length) || cmp(sa, sb) || Buffer.compare(ba, bb);
    }
    case 8:
      return compareObjectIds(a as ObjectId, b as ObjectId);
    case 9:
      return cmp(a as boolean, b as boolean);
    case 10:
      return compareNumbers((a as Date).getTime(), (b as Date).getTime());
    case 11:
      return (a as Long).compare(b as Long);
    case 12: {
      const [pa, fa] = regexParts(a);
      const [pb, fb] = regexParts(b);
      return cmp(pa, pb) || cmp(fa, fb);
    }
    case 13:
      return cmp(String((a as { code?: unknown }).code), String((b as { code?: unknown }).code));
    default:
      return 0;
  }
}

function regexParts(value: unknown): [string, string] {
  if (value instanceof RegExp) return [value.source, value.flags];
  const r = value as { pattern: string; options: string };
  return [r.pattern, r.options];
}

/**
 * The values a dotted path reaches in a document, descending into arrays the
 * way MongoDB builds index keys. A missing field yields `undefined` (indexes
 * store it as null); `viaArray` says an array was expanded (multikey).
 */
export function valuesAtPath(doc: unknown, path: string): { values: unknown[]; viaArray: boolean } {
  const out: unknown[] = [];
  let viaArray = false;
  const walk = (value: unknown, segments: string[], i: number): void => {
    if (i === segments.length) {
      if (Array.isArray(value)) {
        viaArray = true;
        if (value.length === 0) out.push(undefined);
        else out.push(...value);
      } else {
        out.push(value);
      }
      return;
    }
    const segment = segments[i]!;
    if (Array.isArray(value)) {
      viaArray = true;
      if (/^\d+$/.test(segment)) {
        walk(value[Number(segment)], segments, i + 1);
        return;
      }
      const before = out.length;
      for (const element of value) if (isPlainObject(element)) walk(element, segments, i);
      if (out.length === before) out.push(undefined);
      return;
    }
    if (isPlainObject(value)) {
      walk(value[segment], segments, i + 1);
      return;
    }
    out.push(undefined);
  };
  walk(doc, path.split('.'), 0);
  return { values: out, viaArray };
}

/** The value a document sorts by on one key: the smallest (or largest) element of an array. */
export function sortValue(doc: Document, path: string, direction: 1 | -1): unknown {
  const { values, viaArray } = valuesAtPath(doc, path);
  if (!viaArray) return values[0];
  let best: unknown = values[0];
  for (const v of values) if (compareValues(v, best) * direction < 0) best = v;
  return best;
}

/** A value as MongoDB prints it in messages such as E11000's `dup key: { ... }`. */
export function formatValue(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  if (value instanceof Date) return `new Date(${value.getTime()})`;
  if (Array.isArray(value)) return `[ ${value.map(formatValue).join(', ')} ]`;
  if (isPlainObject(value)) return formatDocument(value);
  switch (bsonTypeOf(value)) {
    case 'ObjectId':
      return `ObjectId('${(value as ObjectId).toHexString()}')`;
    case 'Decimal128':
      return `NumberDecimal("${String(value)}")`;
    default:
      return String(value);
  }
}

export function formatDocument(doc: Document): string {
  const entries = Object.entries(doc);
  if (entries.length === 0) return '{}';
  return `{ ${entries.map(([k, v]) => `${k}: ${formatValue(v)}`).join(', ')} }`;
}

const TYPE_ALIASES: Record<string, number> = {
  double: 1,
  string: 2,
  object: 3,
  array: 4,
  binData: 5,
  undefined: 6,
  objectId: 7,
  bool: 8,
  date: 9,
  null: 10,
  regex: 11,
  dbPointer: 12,
  javascript: 13,
  symbol: 14,
  javascriptWithScope: 15,
  int: 16,
  timestamp: 17,
  long: 18,
  decimal: 19,
  minKey: -1,
  maxKey: 127,
};
const TYPE_NAMES = new Map(Object.entries(TYPE_ALIASES).map(([name, code]) => [code, name]));

/** The `$type` names a condition accepts; 'number' stands for every numeric type. */
export function parseTypeList(operand: unknown, operator = '$type'): Set<string> {
  const items = Array.isArray(operand) ? operand : [operand];
  if (items.length === 0) throw new CommandError(ErrorCode.FailedToParse, `${operator} must match at least one type`);
  const names = new Set<string>();
  for (const item of items) {
    if (typeof item === 'string') {
      if (item !== 'number' && !(item in TYPE_ALIASES)) throw new CommandError(ErrorCode.BadValue, `Unknown type name alias: ${item}`);
      names.add(item);
    } else if (isNumber(item)) {
      const code = numberOf(item);
      const name = TYPE_NAMES.get(code);
      if (!Number.isInteger(code) || !name) throw new CommandError(ErrorCode.BadValue, `Invalid numerical type code: ${code}`);
      names.add(name);
    } else {
      throw new CommandError(ErrorCode.TypeMismatch, `type must be represented as a number or a string`);
    }
  }
  if (names.has('number')) for (const numeric of ['double', 'int', 'long', 'decimal']) names.add(numeric);
  return names;
}
