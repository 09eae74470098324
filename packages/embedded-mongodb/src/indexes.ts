import type { Document } from 'bson';

import { BTree } from './btree.js';
import { CommandError, ErrorCode, refusal } from './errors.js';
import { compileFilter, type Matcher } from './matcher.js';
import { compareValues, formatDocument, isNumber, numberOf, typeRank, valuesAtPath } from './values.js';

/** Index-order extremes, used to pad range keys: below and above every entry whatever the direction. */
export const INDEX_MIN = Symbol('index-min');
export const INDEX_MAX = Symbol('index-max');

/** Just below (or above) every value of one BSON type: MongoDB's range predicates are type-bracketed. */
export class TypeBound {
  constructor(
    readonly rank: number,
    readonly high: boolean,
  ) {}
}

/** Index entries are `[...field values, record id]`: the record id makes every entry unique. */
export type IndexKey = unknown[];

/** serverStatus's `indexBuilds`: builds on a collection that existed before, each one pass over its documents. */
export interface IndexBuildStats {
  total: number;
  phases: { scanCollection: number; commit: number };
}

/** MongoDB's verdict on a requested index against an existing one. */
export type IndexComparison = 'different' | 'equivalent' | 'identical';

export interface IndexDefinition {
  name: string;
  key: Document;
  unique?: boolean;
  sparse?: boolean;
  partialFilterExpression?: Document;
  expireAfterSeconds?: number;
  /** Hidden from the planner (collMod can change it). */
  hidden?: boolean;
}

/** Compares two values where either may be a TypeBound. */
export function compareBounded(a: unknown, b: unknown): number {
  const aBound = a instanceof TypeBound;
  const bBound = b instanceof TypeBound;
  if (!aBound && !bBound) return compareValues(a, b);
  const ra = aBound ? a.rank : typeRank(a);
  const rb = bBound ? b.rank : typeRank(b);
  if (ra !== rb) return ra < rb ? -1 : 1;
  const pa = aBound ? (a.high ? 1 : -1) : 0;
  const pb = bBound ? (b.high ? 1 : -1) : 0;
  return Math.sign(pa - pb);
}

/**
 * The `[field, direction]` pairs of an index key pattern: ascending, descending
 * or hashed (kept in value order here, used for equality only); text and
 * geospatial indexes are refused.
 */
export function parseKeyPattern(key: unknown): [string, 1 | -1 | 'hashed'][] {
  if (key === null || typeof key !== 'object' || Array.isArray(key) || Object.keys(key).length === 0) {
    throw new CommandError(ErrorCode.CannotCreateIndex, 'Index keys cannot be an empty field.');
  }
  const pattern = Object.entries(key as Document).map(([field, value]): [string, 1 | -1 | 'hashed'] => {
    if (value === 'hashed') return [field, 'hashed'];
    const n = isNumber(value) ? numberOf(value) : NaN;
    if (typeof value === 'string' || !Number.isFinite(n) || n === 0) {
      throw refusal(
        ErrorCode.CannotCreateIndex,
        `Index type ${JSON.stringify(value)} on field '${field}'`,
        'ascending, descending and hashed indexes are',
      );
    }
    return [field, n > 0 ? 1 : -1];
  });
  if (pattern.filter(([, direction]) => direction === 'hashed').length > 1) {
    throw new CommandError(
      31303,
      `A maximum of one index field is allowed to be hashed but found 2 for 'key' ${formatDocument(key as Document)}`,
    );
  }
  return pattern;
}

/** MongoDB's default index name: `userId_1_id_-1`. */
export function defaultIndexName(key: Document): string {
  return Object.entries(key)
    .map(([field, value]) => `${field}_${String(value)}`)
    .join('_');
}

export class Index {
  readonly fields: string[];
  readonly directions: (1 | -1)[];
  /** The position of the hashed field, -1 when none: such an index serves equality only. */
  readonly hashed: number;
  readonly tree: BTree<IndexKey, undefined>;
  /** Set once any document put an array in a key field; such an index cannot give sort order. */
  multikey = false;
  private readonly partial: Matcher | undefined;

  constructor(readonly definition: IndexDefinition) {
    const pattern = parseKeyPattern(definition.key);
    this.fields = pattern.map(([field]) => field);
    this.directions = pattern.map(([, direction]) => (direction === 'hashed' ? 1 : direction));
    this.hashed = pattern.findIndex(([, direction]) => direction === 'hashed');
    if (this.hashed >= 0 && definition.unique) {
      throw new CommandError(ErrorCode.CannotCreateIndex, 'Currently hashed indexes cannot guarantee uniqueness. Use a regular index.');
    }
    this.partial = definition.partialFilterExpression ? compileFilter(definition.partialFilterExpression) : undefined;
    this.tree = new BTree<IndexKey, undefined>(undefined, this.compare, 64);
  }

  get name(): string {
    return this.definition.name;
  }

  get unique(): boolean {
    return this.definition.unique === true;
  }

  /** Sparse and partial indexes hold only some documents, so the planner never relies on them. */
  get complete(): boolean {
    return !this.definition.sparse && !this.partial;
  }

  readonly compare = (a: IndexKey, b: IndexKey): number => {
    const n = this.fields.length;
    for (let i = 0; i <= n; i++) {
      const x = a[i];
      const y = b[i];
      if (x === y) continue;
      if (x === INDEX_MIN || y === INDEX_MAX) return -1;
      if (x === INDEX_MAX || y === INDEX_MIN) return 1;
      if (i === n) return (x as number) - (y as number);
      const c = compareBounded(x, y);
      if (c !== 0) return c * this.directions[i]!;
    }
    return 0;
  };

  /** The keys (without record id) a document has in this index; none when the index skips it. */
  keysOf(doc: Document): unknown[][] {
    if (this.partial && !this.partial.test(doc)) return [];
    const perField = this.fields.map((field) => valuesAtPath(doc, field));
    if (this.definition.sparse && perField.every(({ values }) => values.every((v) => v === undefined))) return [];
    if (this.hashed >= 0 && perField[this.hashed]!.viaArray) {
      throw new CommandError(16766, 'Error: hashed indexes do not currently support array values');
    }
    const arrays = perField.filter(({ viaArray }) => viaArray);
    if (arrays.length > 1) {
      const names = this.fields.filter((_, i) => perField[i]!.viaArray).map((f) => `[${f}]`);
      throw new CommandError(ErrorCode.CannotIndexParallelArrays, `cannot index parallel arrays ${names.join(' ')}`);
    }
    if (arrays.length === 1) this.multikey = true;
    let keys: unknown[][] = [[]];
    for (const { values } of perField) {
      const next: unknown[][] = [];
      for (const key of keys) for (const v of values) next.push([...key, v === undefined ? null : v]);
      keys = next;
    }
    if (keys.length > 1) {
      keys.sort((a, b) => this.compare([...a, 0], [...b, 0]));
      keys = keys.filter((k, i) => i === 0 || this.compare([...k, 0], [...keys[i - 1]!, 0]) !== 0);
    }
    return keys;
  }

  // `concat` makes exactly-sized arrays; a spread `[...key, rid]` leaves slack that costs ~130 bytes per entry.
  insert(keys: unknown[][], rid: number): void {
    for (const key of keys) this.tree.set(key.concat(rid), undefined);
  }

  remove(keys: unknown[][], rid: number): void {
    for (const key of keys) this.tree.delete(key.concat(rid));
  }

  /** The first of `keys` another record already holds in this unique index. */
  conflict(keys: unknown[][], rid: number): unknown[] | undefined {
    if (!this.unique) return undefined;
    const n = this.fields.length;
    for (const key of keys) {
      // Entries with these values sit between [...key, INDEX_MIN] and [...key, INDEX_MAX]; a unique index holds at most two (ours and another).
      for (let entry = this.tree.nextHigherKey(key.concat(INDEX_MIN)); entry; entry = this.tree.nextHigherKey(entry)) {
        if (this.compare(entry, key.concat(INDEX_MAX)) > 0) break;
        if (entry[n] !== rid) return key;
      }
    }
    return undefined;
  }

  duplicateKeyError(ns: string, key: unknown[], prefix = ''): CommandError {
    const keyValue: Document = {};
    this.fields.forEach((field, i) => {
      keyValue[field] = key[i];
    });
    return new CommandError(
      ErrorCode.DuplicateKey,
      `${prefix}E11000 duplicate key error collection: ${ns} index: ${this.name} dup key: ${formatDocument(keyValue)}`,
      { keyPattern: this.definition.key, keyValue },
    );
  }

  /** The entry `listIndexes` shows. */
  describe(): Document {
    return describeIndex(this.definition);
  }

  /** Whether `other` has this index's key pattern, field order included. */
  sameKey(other: IndexDefinition): boolean {
    return compareValues(this.definition.key, other.key) === 0 && sameKeyOrder(this.definition.key, other.key);
  }

  /**
   * How a requested index compares with this one, as MongoDB judges it: the key
   * and the options that set an index's content (unique, sparse,
   * partialFilterExpression) tell indexes apart; the others (expireAfterSeconds)
   * only tell an identical request from a conflicting one; `hidden` counts for neither.
   */
  compareRequest(other: IndexDefinition): IndexComparison {
    const mine = this.definition;
    const distinct =
      !this.sameKey(other) ||
      isUnique(mine) !== isUnique(other) ||
      Boolean(mine.sparse) !== Boolean(other.sparse) ||
      compareValues(mine.partialFilterExpression ?? null, other.partialFilterExpression ?? null) !== 0;
    if (distinct) return 'different';
    return mine.expireAfterSeconds === other.expireAfterSeconds ? 'identical' : 'equivalent';
  }
}

/** An index spec as `listIndexes` shows it (the `_id` index is unique without saying so). */
export function describeIndex(definition: IndexDefinition): Document {
  const { name, key, unique, sparse, partialFilterExpression, expireAfterSeconds, hidden } = definition;
  return {
    v: 2,
    key,
    name,
    ...(unique && name !== '_id_' ? { unique: true } : {}),
    ...(sparse ? { sparse: true } : {}),
    ...(partialFilterExpression ? { partialFilterExpression } : {}),
    ...(expireAfterSeconds !== undefined ? { expireAfterSeconds } : {}),
    ...(hidden ? { hidden: true } : {}),
  };
}

/** `{_id: 1}` and `{_id: -1}` are unique whether or not the spec says so. */
function isUnique(definition: IndexDefinition): boolean {
  const fields = Object.entries(definition.key);
  const idPattern = fields.length === 1 && fields[0]![0] === '_id' && Math.abs(numberOf(fields[0]![1])) === 1;
  return definition.unique === true || idPattern;
}

function sameKeyOrder(a: Document, b: Document): boolean {
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k, i) => k === kb[i]);
}
