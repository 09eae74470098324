import type { Binary, BSONRegExp, Document } from 'bson';
import { Aggregator } from 'mingo/aggregator';
import type { Iterator } from 'mingo/lazy';
import { Query } from 'mingo/query';
import type { Options } from 'mingo/types';

import { CommandError, ErrorCode, refusal } from './errors.js';
import { compileJsonSchema } from './json-schema.js';
import { engineMingoOptions } from './mingo.js';
import {
  bsonTypeOf,
  compareValues,
  fieldOf,
  isDocument,
  isNumber,
  isPlainObject,
  numberOf,
  parseTypeList,
  promote,
  typeName,
  typeRank,
} from './values.js';

/**
 * `$match` as a pipeline stage: this matcher, with the pipeline's `let`
 * variables and those of an enclosing `$lookup` for `$expr`.
 */
function matchStage(collection: Iterator, filter: unknown, options: Options): Iterator {
  if (!isPlainObject(filter)) throw new CommandError(15959, 'the match filter must be an expression in an object');
  const lookupVariables = (options as { local?: { variables?: Document } }).local?.variables;
  const matcher = compileFilter(filter, { variables: { ...options.variables, ...lookupVariables } });
  return collection.filter((doc: Document) => matcher.test(doc));
}

/** The options of every mingo `Query` and `Aggregator` of the engine (their context has the engine's operators). */
export const MINGO_OPTIONS = engineMingoOptions(matchStage);

/** What a filter may refer to besides the document: `let` variables (`$$name` in `$expr`). */
export interface MatchContext {
  variables?: Document;
}

export interface Matcher {
  test(doc: Document): boolean;
}

type DocumentPredicate = (doc: Document) => boolean;
/** Tests the values a path reaches in one document. */
type PathPredicate = (values: PathValue[]) => boolean;

/** A value a path reaches; `expanded` marks elements of an array at the end of the path. */
interface PathValue {
  value: unknown;
  expanded: boolean;
}

const MISSING: PathValue = { value: undefined, expanded: false };

/**
 * Compiles a query filter into a predicate over typed documents, with
 * MongoDB's semantics: implicit traversal of arrays, type-bracketed
 * comparisons, null matching missing fields, exact BSON types for `$type`.
 */
export function compileFilter(filter: unknown, context: MatchContext = {}): Matcher {
  if (filter === undefined || filter === null) return { test: () => true };
  if (!isPlainObject(filter)) throw new CommandError(ErrorCode.TypeMismatch, "'filter' must be an object");
  const predicate = compileQuery(filter, context, true);
  return { test: predicate };
}

/**
 * Tests one value (an array element, for `$pull`, `arrayFilters` and the
 * positional operator) against a condition on a field: `{$gt: 1}` or a value.
 */
export function compileValueCondition(condition: unknown, context: MatchContext = {}): (value: unknown) => boolean {
  const predicate = compileCondition(condition, context);
  return (value) => predicate(valuesOf(value));
}

/** Whether `value` is `{$op: ...}` rather than a literal (DBRef documents start with `$ref`/`$id`/`$db` and are literals). */
export function isOperatorDocument(value: unknown): value is Document {
  if (!isPlainObject(value)) return false;
  const first = Object.keys(value)[0];
  return first !== undefined && first.startsWith('$') && !DBREF_FIELDS.has(first);
}

const DBREF_FIELDS = new Set(['$ref', '$id', '$db']);

function compileQuery(query: Document, context: MatchContext, topLevel: boolean): DocumentPredicate {
  const predicates: DocumentPredicate[] = [];
  for (const [key, value] of Object.entries(query)) {
    if (key.startsWith('$') && !DBREF_FIELDS.has(key)) {
      const predicate = compileTopLevelOperator(key, value, context, topLevel);
      if (predicate) predicates.push(predicate);
      continue;
    }
    const parts = key.split('.');
    const condition = compileCondition(value, context);
    predicates.push((doc) => condition(valuesAtPath(doc, parts)));
  }
  if (predicates.length === 1) return predicates[0]!;
  return (doc) => predicates.every((predicate) => predicate(doc));
}

function subqueries(operator: string, value: unknown, context: MatchContext): DocumentPredicate[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw new CommandError(ErrorCode.BadValue, `${operator} must be a nonempty array`);
  }
  return value.map((clause) => {
    if (!isPlainObject(clause)) throw new CommandError(ErrorCode.BadValue, `${operator} argument's entries must be objects`);
    return compileQuery(clause, context, false);
  });
}

function compileTopLevelOperator(
  operator: string,
  value: unknown,
  context: MatchContext,
  topLevel: boolean,
): DocumentPredicate | undefined {
  switch (operator) {
    case '$and': {
      const clauses = subqueries(operator, value, context);
      return (doc) => clauses.every((clause) => clause(doc));
    }
    case '$or': {
      const clauses = subqueries(operator, value, context);
      return (doc) => clauses.some((clause) => clause(doc));
    }
    case '$nor': {
      const clauses = subqueries(operator, value, context);
      return (doc) => !clauses.some((clause) => clause(doc));
    }
    case '$expr': {
      const query = new Query({ $expr: promote(value) } as Document, { ...MINGO_OPTIONS, variables: context.variables });
      return (doc) => query.test(promote(doc) as Document);
    }
    case '$jsonSchema': {
      if (!isPlainObject(value)) throw new CommandError(ErrorCode.TypeMismatch, '$jsonSchema must be an object');
      const schema = compileJsonSchema(value);
      return (doc) => schema(doc);
    }
    case '$comment':
      return undefined;
    case '$alwaysTrue':
      return () => true;
    case '$alwaysFalse':
      return () => false;
    case '$sampleRate': {
      const rate = isNumber(value) ? numberOf(value) : NaN;
      if (!(rate >= 0 && rate <= 1)) throw new CommandError(ErrorCode.BadValue, '$sampleRate must be a numeric value between 0 and 1');
      return () => Math.random() < rate;
    }
    case '$where':
      throw refusal(ErrorCode.BadValue, '$where (server-side JavaScript)');
    case '$text':
      throw refusal(ErrorCode.BadValue, '$text (text indexes)');
    default:
      throw new CommandError(
        ErrorCode.BadValue,
        topLevel
          ? `unknown top level operator: ${operator}. If you have a field name that starts with a '$' symbol, consider using $getField or $setField.`
          : `unknown top level operator: ${operator}`,
      );
  }
}

/** The values a dotted path reaches, descending into arrays as MongoDB's matcher does. */
function valuesAtPath(doc: Document, parts: string[]): PathValue[] {
  const out: PathValue[] = [];
  const walk = (value: unknown, i: number): void => {
    if (i === parts.length) {
      out.push({ value, expanded: false });
      if (Array.isArray(value)) for (const element of value) out.push({ value: element, expanded: true });
      return;
    }
    const part = parts[i]!;
    if (Array.isArray(value)) {
      // `a.1` names element 1 and also field "1" of the array's documents.
      if (/^\d+$/.test(part)) {
        const index = Number(part);
        if (index < value.length) walk(value[index], i + 1);
      }
      for (const element of value) if (isDocument(element)) walk(fieldOf(element, part), i + 1);
      return;
    }
    if (isDocument(value)) {
      const child = fieldOf(value, part);
      if (child === undefined) out.push(MISSING);
      else walk(child, i + 1);
      return;
    }
    out.push(MISSING);
  };
  walk(doc, 0);
  return out.length === 0 ? [MISSING] : out;
}

function valuesOf(value: unknown): PathValue[] {
  const out: PathValue[] = [{ value, expanded: false }];
  if (Array.isArray(value)) for (const element of value) out.push({ value: element, expanded: true });
  return out;
}

function compileCondition(condition: unknown, context: MatchContext): PathPredicate {
  if (!isOperatorDocument(condition)) return anyValue(equality(condition, true));
  const entries = Object.entries(condition);
  const options = (condition as Document).$options;
  if (options !== undefined && (condition as Document).$regex === undefined) {
    throw new CommandError(ErrorCode.BadValue, '$options needs a $regex');
  }
  const predicates: PathPredicate[] = [];
  for (const [operator, operand] of entries) {
    if (operator === '$options') continue;
    if (!operator.startsWith('$')) {
      throw new CommandError(ErrorCode.BadValue, `unknown operator: ${operator}`);
    }
    predicates.push(compileOperator(operator, operand, condition as Document, context));
  }
  if (predicates.length === 1) return predicates[0]!;
  return (values) => predicates.every((predicate) => predicate(values));
}

function anyValue(test: (value: unknown) => boolean): PathPredicate {
  return (values) => values.some(({ value }) => test(value));
}

function compileOperator(operator: string, operand: unknown, condition: Document, context: MatchContext): PathPredicate {
  switch (operator) {
    case '$eq':
      return anyValue(equality(operand, false));
    case '$ne': {
      const test = equality(operand, false);
      return (values) => !values.some(({ value }) => test(value));
    }
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte':
      return anyValue(comparison(operator, operand));
    case '$in':
      return anyValue(membership(operator, operand));
    case '$nin': {
      const test = membership(operator, operand);
      return (values) => !values.some(({ value }) => test(value));
    }
    case '$exists': {
      const wanted = truthy(operand);
      return (values) => values.some(({ value }) => value !== undefined) === wanted;
    }
    case '$type':
      return typeCondition(operand);
    case '$size': {
      if (!isNumber(operand)) throw new CommandError(ErrorCode.BadValue, '$size needs a number');
      const size = numberOf(operand);
      if (!Number.isInteger(size))
        throw new CommandError(ErrorCode.BadValue, `Failed to parse $size. Expected an integer, but found ${size}`);
      if (size < 0) throw new CommandError(ErrorCode.BadValue, `Failed to parse $size. Expected a non-negative number in: $size: ${size}`);
      return (values) => values.some(({ value, expanded }) => !expanded && Array.isArray(value) && value.length === size);
    }
    case '$all':
      return allCondition(operand, context);
    case '$elemMatch':
      return elemMatch(operand, context);
    case '$regex':
      return anyValue(regexTest(operand, condition.$options));
    case '$not': {
      if (!(isPlainObject(operand) || isRegex(operand))) throw new CommandError(ErrorCode.BadValue, '$not needs a regex or a document');
      if (isPlainObject(operand) && Object.keys(operand).length === 0) throw new CommandError(ErrorCode.BadValue, '$not cannot be empty');
      if (isPlainObject(operand) && !isOperatorDocument(operand))
        throw new CommandError(ErrorCode.BadValue, `unknown operator: ${Object.keys(operand)[0]}`);
      const inner = isRegex(operand) ? anyValue(regexTest(operand, undefined)) : compileCondition(operand, context);
      return (values) => !inner(values);
    }
    case '$mod':
      return anyValue(modulo(operand));
    case '$bitsAllSet':
    case '$bitsAnySet':
    case '$bitsAllClear':
    case '$bitsAnyClear':
      return anyValue(bitTest(operator, operand));
    case '$comment':
      return () => true;
    case '$near':
    case '$nearSphere':
    case '$geoWithin':
    case '$within':
    case '$geoIntersects':
      throw refusal(ErrorCode.BadValue, `${operator} (geospatial queries)`);
    default:
      throw new CommandError(ErrorCode.BadValue, `unknown operator: ${operator}`);
  }
}

function truthy(value: unknown): boolean {
  if (isNumber(value)) return numberOf(value) !== 0;
  return value !== false && value !== null && value !== undefined;
}

function isRegex(value: unknown): value is BSONRegExp | RegExp {
  return value instanceof RegExp || bsonTypeOf(value) === 'BSONRegExp';
}

/** Stands in for `\#` while comments are stripped: a character no pattern holds. */
const ESCAPED_HASH = String.fromCharCode(0);

/** A JS RegExp for a BSON regex; `x` (extended) is applied by stripping whitespace and comments. */
function toRegExp(pattern: string, options: string): RegExp {
  let source = pattern;
  if (options.includes('x'))
    source = source
      .replace(/\\#/g, ESCAPED_HASH)
      .replace(/#[^\n]*/g, '')
      .replaceAll(/\s+/g, '')
      .replaceAll(ESCAPED_HASH, '\\#');
  const flags = [...new Set(options.replace(/[^ims]/g, '').split(''))].join('') + 'u';
  try {
    return new RegExp(source, flags);
  } catch {
    try {
      return new RegExp(source, flags.replace('u', ''));
    } catch (error) {
      throw new CommandError(51091, `Regular expression is invalid: ${(error as Error).message}`);
    }
  }
}

function regexOf(value: BSONRegExp | RegExp, options?: unknown): RegExp {
  if (value instanceof RegExp) return typeof options === 'string' ? toRegExp(value.source, options) : value;
  return toRegExp(value.pattern, typeof options === 'string' ? options : value.options);
}

function regexTest(operand: unknown, options: unknown): (value: unknown) => boolean {
  if (options !== undefined && typeof options !== 'string') throw new CommandError(ErrorCode.BadValue, '$options has to be a string');
  let regex: RegExp;
  if (typeof operand === 'string') regex = toRegExp(operand, typeof options === 'string' ? options : '');
  else if (isRegex(operand)) regex = regexOf(operand, options);
  else throw new CommandError(ErrorCode.BadValue, '$regex has to be a string');
  return (value) => matchesRegex(regex, value);
}

function matchesRegex(regex: RegExp, value: unknown): boolean {
  if (typeof value === 'string') return regex.test(value);
  if (bsonTypeOf(value) === 'BSONSymbol') return regex.test(String((value as { value: string }).value));
  return false;
}

/**
 * Equality as `{field: value}` (implicit, where a regex matches strings) or
 * `{$eq: value}` (where a regex matches only the same regex). Null also matches
 * a missing field.
 */
function equality(operand: unknown, implicit: boolean): (value: unknown) => boolean {
  if (operand === undefined) throw new CommandError(ErrorCode.BadValue, 'cannot compare to undefined');
  if (implicit && isRegex(operand)) {
    const regex = regexOf(operand);
    return (value) => matchesRegex(regex, value) || (isRegex(value) && compareValues(value, operand) === 0);
  }
  if (operand === null) return (value) => value === null || value === undefined || typeName(value) === 'undefined';
  const rank = typeRank(operand);
  return (value) => value !== undefined && typeRank(value) === rank && compareValues(value, operand) === 0;
}

function comparison(operator: string, operand: unknown): (value: unknown) => boolean {
  if (operand === undefined) throw new CommandError(ErrorCode.BadValue, 'cannot compare to undefined');
  if (isRegex(operand)) throw new CommandError(ErrorCode.BadValue, `Can't have RegEx as arg to predicate over field`);
  const accept = (c: number): boolean => (operator === '$gt' ? c > 0 : operator === '$gte' ? c >= 0 : operator === '$lt' ? c < 0 : c <= 0);
  const rank = typeRank(operand);
  // MinKey and MaxKey compare with values of every type; anything else only within its type.
  if (rank === 1 || rank === 14) return (value) => accept(compareValues(value === undefined ? null : value, operand));
  if (operand === null) return (value) => (operator === '$gte' || operator === '$lte') && (value === null || value === undefined);
  return (value) => value !== undefined && typeRank(value) === rank && accept(compareValues(value, operand));
}

function membership(operator: string, operand: unknown): (value: unknown) => boolean {
  if (!Array.isArray(operand)) throw new CommandError(ErrorCode.BadValue, `${operator} needs an array`);
  const tests = operand.map((item) => {
    if (isOperatorDocument(item)) throw new CommandError(ErrorCode.BadValue, `cannot nest $ under ${operator}`);
    return equality(item, true);
  });
  return (value) => tests.some((test) => test(value));
}

function allCondition(operand: unknown, context: MatchContext): PathPredicate {
  if (!Array.isArray(operand)) throw new CommandError(ErrorCode.BadValue, '$all needs an array');
  if (operand.length === 0) return () => false;
  const predicates = operand.map((item): PathPredicate => {
    if (isPlainObject(item) && '$elemMatch' in item) {
      if (Object.keys(item).length !== 1) throw new CommandError(ErrorCode.BadValue, '$all/$elemMatch has to be consistent');
      return elemMatch(item.$elemMatch, context);
    }
    if (isOperatorDocument(item)) throw new CommandError(ErrorCode.BadValue, 'no $ expressions in $all');
    return anyValue(equality(item, true));
  });
  return (values) => predicates.every((predicate) => predicate(values));
}

function elemMatch(operand: unknown, context: MatchContext): PathPredicate {
  if (!isPlainObject(operand)) throw new CommandError(ErrorCode.BadValue, '$elemMatch needs an Object');
  const first = Object.keys(operand)[0];
  // {$elemMatch: {$gt: 1}} tests elements as values; {$elemMatch: {a: 1}} or {$or: ...} as documents.
  const valueForm = isOperatorDocument(operand) && !['$and', '$or', '$nor', '$expr', '$where', '$text', '$jsonSchema'].includes(first!);
  let test: (element: unknown) => boolean;
  if (valueForm) {
    const condition = compileCondition(operand, context);
    test = (element) => condition(valuesOf(element));
  } else {
    const query = compileQuery(operand, context, false);
    test = (element) => isDocument(element) && query(element);
  }
  return (values) => values.some(({ value, expanded }) => !expanded && Array.isArray(value) && value.some(test));
}

function typeCondition(operand: unknown): PathPredicate {
  const names = parseTypeList(operand);
  // An array at the end of the path matches 'array' itself; other types are looked for among its elements.
  return (values) =>
    values.some(({ value, expanded }) => {
      if (value === undefined) return false;
      const name = typeName(value);
      if (name === 'array') return !expanded && names.has('array');
      return names.has(name);
    });
}

function modulo(operand: unknown): (value: unknown) => boolean {
  if (!Array.isArray(operand)) throw new CommandError(ErrorCode.BadValue, 'malformed mod, needs to be an array');
  if (operand.length < 2) throw new CommandError(ErrorCode.BadValue, 'malformed mod, not enough elements');
  if (operand.length > 2) throw new CommandError(ErrorCode.BadValue, 'malformed mod, too many elements');
  if (!isNumber(operand[0])) throw new CommandError(ErrorCode.BadValue, 'malformed mod, divisor not a number');
  if (!isNumber(operand[1])) throw new CommandError(ErrorCode.BadValue, 'malformed mod, remainder not a number');
  const divisor = Math.trunc(numberOf(operand[0]));
  const remainder = Math.trunc(numberOf(operand[1]));
  if (!Number.isFinite(divisor) || !Number.isFinite(remainder))
    throw new CommandError(ErrorCode.BadValue, 'malformed mod, divisor value is invalid :: caused by :: NaN or Infinity');
  if (divisor === 0) throw new CommandError(ErrorCode.BadValue, 'divisor cannot be 0');
  return (value) => {
    if (!isNumber(value)) return false;
    const n = Math.trunc(numberOf(value));
    return Number.isFinite(n) && n % divisor === remainder;
  };
}

/** The bits of a value as little-endian bytes; undefined when it has none (not an integer or binary). */
function bitsOf(value: unknown): Uint8Array | undefined {
  const type = bsonTypeOf(value);
  if (type === 'Binary') {
    const binary = value as Binary;
    return binary.buffer.subarray(0, binary.position);
  }
  if (!isNumber(value)) return undefined;
  let n: bigint;
  if (type === 'Long') n = (value as { toBigInt(): bigint }).toBigInt();
  else {
    const x = numberOf(value);
    if (!Number.isInteger(x) || x < -(2 ** 63) || x >= 2 ** 63) return undefined;
    n = BigInt(x);
  }
  const bytes = new Uint8Array(8);
  new DataView(bytes.buffer).setBigInt64(0, n, true);
  return bytes;
}

function bitTest(operator: string, operand: unknown): (value: unknown) => boolean {
  let positions: number[];
  if (Array.isArray(operand)) {
    positions = operand.map((p) => {
      if (!isNumber(p) || !Number.isInteger(numberOf(p)) || numberOf(p) < 0) {
        throw new CommandError(ErrorCode.BadValue, `bit positions must be non-negative integers, but got: ${String(p)}`);
      }
      return numberOf(p);
    });
  } else if (bsonTypeOf(operand) === 'Binary') {
    const mask = bitsOf(operand)!;
    positions = [];
    mask.forEach((byte, i) => {
      for (let bit = 0; bit < 8; bit++) if (byte & (1 << bit)) positions.push(i * 8 + bit);
    });
  } else if (isNumber(operand)) {
    const n = numberOf(operand);
    if (!Number.isInteger(n) || n < 0)
      throw new CommandError(ErrorCode.BadValue, `${operator} takes a non-negative integer bitmask, but got: ${n}`);
    const mask = bitsOf(operand)!;
    positions = [];
    mask.forEach((byte, i) => {
      for (let bit = 0; bit < 8; bit++) if (byte & (1 << bit)) positions.push(i * 8 + bit);
    });
  } else {
    throw new CommandError(ErrorCode.BadValue, `${operator} takes an Array, a number, or a BinData but received: ${typeName(operand)}`);
  }
  return (value) => {
    const bytes = bitsOf(value);
    if (!bytes) return false;
    // A negative integer is sign-extended beyond its 64 bits; binary data is zero beyond its length.
    const negative = isNumber(value) && numberOf(value) < 0;
    const bitAt = (p: number): boolean => (p < bytes.length * 8 ? (bytes[p >> 3]! & (1 << (p & 7))) !== 0 : negative);
    switch (operator) {
      case '$bitsAllSet':
        return positions.every(bitAt);
      case '$bitsAnySet':
        return positions.some(bitAt);
      case '$bitsAllClear':
        return positions.every((p) => !bitAt(p));
      default:
        return positions.some((p) => !bitAt(p));
    }
  };
}

/**
 * `let` variables: constants, or expressions evaluated once (they cannot read
 * the document), for `$$name` in `$expr` and pipelines (both run by mingo, so
 * in the promoted view).
 */
export function evaluateLet(spec: unknown): Document | undefined {
  if (spec === undefined || spec === null) return undefined;
  if (!isPlainObject(spec)) throw new CommandError(ErrorCode.TypeMismatch, "BSON field 'let' is the wrong type, expected type 'object'");
  const variables: Document = {};
  for (const [name, value] of Object.entries(spec)) {
    if (!/^[a-z_\u0080-\uffff][\w\u0080-\uffff]*$/.test(name)) {
      throw new CommandError(ErrorCode.FailedToParse, `'${name}' starts with an invalid character for a user variable name`);
    }
    const expression = isPlainObject(value) || (typeof value === 'string' && value.startsWith('$'));
    variables[name] = expression ? evaluateConstant(value) : promote(value);
  }
  return variables;
}

function evaluateConstant(expression: unknown): unknown {
  const [result] = new Aggregator([{ $project: { _id: 0, value: promote(expression) } }], MINGO_OPTIONS).run([{}]) as Document[];
  return result?.value ?? null;
}
