import type { Document } from 'bson';

import type { Collection } from './collection.js';
import { CommandError, ErrorCode } from './errors.js';
import { compareBounded, type Index, INDEX_MAX, INDEX_MIN, type IndexKey, TypeBound } from './indexes.js';
import { bsonTypeOf, compareValues, formatValue, isNumber, isPlainObject, numberOf, typeRank } from './values.js';

export type SortSpec = [field: string, direction: 1 | -1][];

/** What a filter says about one top-level field, in value space. */
interface FieldPredicate {
  points?: unknown[];
  lo?: unknown;
  loInclusive?: boolean;
  hi?: unknown;
  hiInclusive?: boolean;
  /** The bounds say everything the predicate says, so matched index entries need no re-check. */
  exact: boolean;
}

/** An index range in index order: every entry `start <= key <= end`. */
export interface Interval {
  start: IndexKey;
  end: IndexKey;
}

export type QueryPlan =
  | { kind: 'collection'; backward: boolean; exact: boolean; sortProvided: boolean }
  | {
      kind: 'index';
      index: Index;
      intervals: Interval[];
      backward: boolean;
      /** No document needs re-checking against the filter. */
      exact: boolean;
      /** The scan order is the requested sort order. */
      sortProvided: boolean;
    };

/** More combined equality points than this and the planner stops adding index fields. */
const MAX_INTERVALS = 4096;

export function parseSort(sort: unknown): SortSpec {
  if (sort === undefined || sort === null) return [];
  if (!isPlainObject(sort)) throw new CommandError(ErrorCode.BadValue, 'sort must be an object');
  return Object.entries(sort).map(([field, value]) => {
    const n = Number(value);
    if (n !== 1 && n !== -1) {
      throw new CommandError(ErrorCode.BadValue, `$sort key ordering must be 1 (for ascending) or -1 (for descending)`);
    }
    return [field, n];
  });
}

/** Chooses how to read the documents a filter (and sort) asks for. */
export function planQuery(collection: Collection, filter: Document, sort: SortSpec, hint?: unknown): QueryPlan {
  const { predicates, opaque } = extractPredicates(filter);
  const emptyFilter = Object.keys(filter).length === 0;
  const collectionPlan = (backward: boolean): QueryPlan => ({
    kind: 'collection',
    backward,
    exact: emptyFilter,
    sortProvided: sort.length === 0,
  });

  let candidates = collection.indexes.filter((index) => index.complete && !index.definition.hidden);
  const hinted = hint !== undefined && hint !== null && hint !== '';
  if (hinted) {
    if (isPlainObject(hint) && '$natural' in hint) return collectionPlan(Number(hint.$natural) < 0);
    const index = collection.indexes.find(
      (candidate) =>
        !candidate.definition.hidden &&
        (typeof hint === 'string' ? candidate.name === hint : isPlainObject(hint) && candidate.sameKey({ name: '', key: hint })),
    );
    if (!index)
      throw new CommandError(
        ErrorCode.BadValue,
        'error processing query: planner returned error :: caused by :: hint provided does not correspond to an existing index',
      );
    candidates = [index];
  }

  let best: { plan: QueryPlan; score: number[] } | undefined;
  for (const index of candidates) {
    const analysed = analyseIndex(index, predicates, opaque, filter, sort);
    const usable = hinted || analysed.bounded > 0 || (sort.length > 0 && analysed.plan.sortProvided);
    if (!usable) continue;
    if (!best || compareScores(analysed.score, best.score) > 0) best = analysed;
  }
  return best?.plan ?? collectionPlan(false);
}

function compareScores(a: number[], b: number[]): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
}

function analyseIndex(
  index: Index,
  predicates: Map<string, FieldPredicate>,
  opaque: boolean,
  filter: Document,
  sort: SortSpec,
): { plan: QueryPlan; score: number[]; bounded: number } {
  const width = index.fields.length + 1;
  let starts: unknown[][] = [[]];
  let ends: unknown[][] = [[]];
  let startPad: symbol = INDEX_MIN;
  let endPad: symbol = INDEX_MAX;
  const boundedFields: string[] = [];
  const pointFields = new Set<string>();

  for (let i = 0; i < index.fields.length; i++) {
    const field = index.fields[i]!;
    const direction = index.directions[i]!;
    const predicate = predicates.get(field);
    if (!predicate || (!predicate.points && predicate.lo === undefined && predicate.hi === undefined)) break;
    if (i === index.hashed && !predicate.points) break;
    if (predicate.points) {
      const points = uniqueSorted(inRange(predicate), direction);
      if (starts.length * Math.max(points.length, 1) > MAX_INTERVALS) break;
      starts = starts.flatMap((prefix) => points.map((p) => [...prefix, p]));
      ends = starts.map((key) => [...key]);
      boundedFields.push(field);
      if (points.length === 1) pointFields.add(field);
      continue;
    }
    const ascending = direction === 1;
    const [first, firstInclusive] = ascending ? [predicate.lo, predicate.loInclusive] : [predicate.hi, predicate.hiInclusive];
    const [last, lastInclusive] = ascending ? [predicate.hi, predicate.hiInclusive] : [predicate.lo, predicate.loInclusive];
    starts = starts.map((prefix) => [...prefix, first]);
    ends = ends.map((prefix) => [...prefix, last]);
    startPad = firstInclusive === false ? INDEX_MAX : INDEX_MIN;
    endPad = lastInclusive === false ? INDEX_MIN : INDEX_MAX;
    boundedFields.push(field);
    break;
  }

  const intervals: Interval[] = [];
  starts.forEach((start, i) => {
    const interval = {
      start: pad(start, width, startPad),
      end: pad(ends[i]!, width, endPad),
    };
    if (index.compare(interval.start, interval.end) <= 0) intervals.push(interval);
  });

  const filterFields = Object.keys(filter);
  const exact =
    !opaque && !index.multikey && filterFields.every((field) => predicates.get(field)?.exact === true && boundedFields.includes(field));
  const direction = sortDirection(index, sort, pointFields);
  const uniquePoint = index.unique && pointFields.size === index.fields.length && !index.multikey;
  const plan: QueryPlan = {
    kind: 'index',
    index,
    intervals,
    backward: direction === -1,
    exact,
    sortProvided: direction !== 0,
  };
  const score = [uniquePoint ? 1 : 0, boundedFields.length, direction !== 0 ? 1 : 0, exact ? 1 : 0, -index.fields.length];
  return { plan, score, bounded: boundedFields.length };
}

function pad(key: unknown[], width: number, filler: symbol): IndexKey {
  const out = [...key];
  while (out.length < width) out.push(filler);
  return out;
}

function inRange(predicate: FieldPredicate): unknown[] {
  const points = predicate.points ?? [];
  return points.filter((p) => {
    if (predicate.lo !== undefined) {
      const c = compareBounded(p, predicate.lo);
      if (c < 0 || (c === 0 && !predicate.loInclusive)) return false;
    }
    if (predicate.hi !== undefined) {
      const c = compareBounded(p, predicate.hi);
      if (c > 0 || (c === 0 && !predicate.hiInclusive)) return false;
    }
    return true;
  });
}

function uniqueSorted(values: unknown[], direction: 1 | -1): unknown[] {
  const sorted = [...values].sort((a, b) => compareValues(a, b) * direction);
  return sorted.filter((v, i) => i === 0 || compareValues(v, sorted[i - 1]) !== 0);
}

/** 1 or -1 when scanning the index forward or backward yields the sort order, else 0. */
function sortDirection(index: Index, sort: SortSpec, pointFields: Set<string>): 1 | -1 | 0 {
  const keys = sort.filter(([field]) => !pointFields.has(field));
  if (keys.length === 0) return 1;
  if (index.multikey || index.hashed >= 0) return 0;
  let k = 0;
  let multiplier: 1 | -1 | 0 = 0;
  for (let i = 0; i < index.fields.length && k < keys.length; i++) {
    const field = index.fields[i]!;
    const [sortField, sortDir] = keys[k]!;
    if (sortField === field) {
      const m = (sortDir * index.directions[i]!) as 1 | -1;
      if (multiplier !== 0 && m !== multiplier) return 0;
      multiplier = m;
      k++;
    } else if (!pointFields.has(field)) {
      return 0;
    }
  }
  return k === keys.length ? multiplier : 0;
}

/** Reads the bounds an index can use out of a filter's top-level fields. */
export function extractPredicates(filter: Document): { predicates: Map<string, FieldPredicate>; opaque: boolean } {
  const predicates = new Map<string, FieldPredicate>();
  let opaque = false;
  for (const [field, condition] of Object.entries(filter)) {
    if (field.startsWith('$')) {
      opaque = true;
      continue;
    }
    const predicate = fieldPredicate(condition);
    if (predicate) predicates.set(field, predicate);
    else opaque = true;
  }
  return { predicates, opaque };
}

function boundable(value: unknown): boolean {
  return (
    value !== undefined &&
    !Array.isArray(value) &&
    !isPlainObject(value) &&
    !(value instanceof RegExp) &&
    bsonTypeOf(value) !== 'BSONRegExp'
  );
}

function exactScalar(value: unknown): boolean {
  if (isNumber(value)) return !Number.isNaN(numberOf(value));
  if (typeof value === 'string' || typeof value === 'boolean' || value instanceof Date) return true;
  return bsonTypeOf(value) === 'ObjectId';
}

function rangeable(value: unknown): boolean {
  return boundable(value) && value !== null && typeRank(value) !== 1 && typeRank(value) !== 14;
}

function fieldPredicate(condition: unknown): FieldPredicate | undefined {
  const isOperators = isPlainObject(condition) && Object.keys(condition)[0]?.startsWith('$') === true;
  if (!isOperators) {
    return boundable(condition) ? { points: [condition], exact: exactScalar(condition) } : undefined;
  }
  const predicate: FieldPredicate = { exact: true };
  const rangeRanks = new Set<number>();
  const addPoints = (values: unknown[]): void => {
    predicate.points = predicate.points ? predicate.points.filter((p) => values.some((v) => compareValues(p, v) === 0)) : values;
    if (!values.every(exactScalar)) predicate.exact = false;
  };
  for (const [op, arg] of Object.entries(condition)) {
    switch (op) {
      case '$eq':
        if (boundable(arg)) addPoints([arg]);
        else predicate.exact = false;
        break;
      case '$in':
        if (Array.isArray(arg) && arg.every(boundable)) addPoints(arg);
        else predicate.exact = false;
        break;
      case '$gt':
      case '$gte':
      case '$lt':
      case '$lte':
        if (!rangeable(arg)) {
          predicate.exact = false;
          break;
        }
        if (op.startsWith('$gt')) tightenLow(predicate, arg, op === '$gte');
        else tightenHigh(predicate, arg, op === '$lte');
        rangeRanks.add(typeRank(arg));
        if (!exactScalar(arg)) predicate.exact = false;
        break;
      default:
        predicate.exact = false;
    }
  }
  // Operands of several types: each comparison is type-bracketed, so let the filter decide.
  if (rangeRanks.size > 1) predicate.exact = false;
  if (predicate.points && (predicate.lo !== undefined || predicate.hi !== undefined)) {
    predicate.points = inRange(predicate);
    predicate.lo = predicate.hi = undefined;
  }
  return predicate;
}

function tightenLow(predicate: FieldPredicate, value: unknown, inclusive: boolean): void {
  const c = predicate.lo === undefined ? 1 : compareBounded(value, predicate.lo);
  if (c > 0 || (c === 0 && !inclusive)) {
    predicate.lo = value;
    predicate.loInclusive = inclusive;
  }
  if (predicate.hi === undefined) {
    predicate.hi = new TypeBound(typeRank(value), true);
    predicate.hiInclusive = true;
  }
}

function tightenHigh(predicate: FieldPredicate, value: unknown, inclusive: boolean): void {
  const c = predicate.hi === undefined ? -1 : compareBounded(value, predicate.hi);
  if (c < 0 || (c === 0 && !inclusive)) {
    predicate.hi = value;
    predicate.hiInclusive = inclusive;
  }
  if (predicate.lo === undefined) {
    predicate.lo = new TypeBound(typeRank(value), false);
    predicate.loInclusive = true;
  }
}

/** The plan as `explain` shows it (classic engine stage names). */
export function describePlan(plan: QueryPlan, filter: Document, sort: SortSpec, skip: number, limit: number): Document {
  let stage: Document;
  if (plan.kind === 'collection') {
    stage = { stage: 'COLLSCAN', filter, direction: plan.backward ? 'backward' : 'forward' };
  } else {
    const { index } = plan;
    const ixscan = {
      stage: 'IXSCAN',
      keyPattern: index.definition.key,
      indexName: index.name,
      isMultiKey: index.multikey,
      isUnique: index.unique,
      direction: plan.backward ? 'backward' : 'forward',
      indexBounds: describeBounds(index, plan.intervals),
    };
    stage = { stage: 'FETCH', ...(plan.exact ? {} : { filter }), inputStage: ixscan };
  }
  if (!plan.sortProvided) {
    stage = { stage: 'SORT', sortPattern: Object.fromEntries(sort), memLimit: 104857600, type: 'simple', inputStage: stage };
  }
  if (skip > 0) stage = { stage: 'SKIP', skipAmount: skip, inputStage: stage };
  if (limit > 0) stage = { stage: 'LIMIT', limitAmount: limit, inputStage: stage };
  return stage;
}

function describeBounds(index: Index, intervals: Interval[]): Document {
  const bounds: Document = {};
  index.fields.forEach((field, i) => {
    const ranges = intervals.map(({ start, end }) => `[${describeBound(start[i], true)}, ${describeBound(end[i], false)}]`);
    bounds[field] = [...new Set(ranges)];
  });
  return bounds;
}

function describeBound(value: unknown, low: boolean): string {
  if (value === INDEX_MIN || value === INDEX_MAX) return low ? 'MinKey' : 'MaxKey';
  if (value instanceof TypeBound) return value.high ? `inf(type ${value.rank})` : `-inf(type ${value.rank})`;
  return formatValue(value);
}
