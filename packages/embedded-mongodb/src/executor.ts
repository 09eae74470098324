import type { Document } from 'bson';

import type { Collection } from './collection.js';
import { CommandError, ErrorCode } from './errors.js';
import type { IndexKey } from './indexes.js';
import { compileFilter, type Matcher } from './matcher.js';
import { planQuery, type QueryPlan, type SortSpec } from './planner.js';
import { compareValues, sortValue, typed } from './values.js';

export interface ScanStats {
  keysExamined: number;
  docsExamined: number;
  nReturned: number;
}

/** A matching stored document: its record id, bytes and (when read) its typed view. */
export interface Match {
  rid: number;
  raw: Buffer;
  doc?: Document;
}

/** A pull-based scan that survives writes between pulls: it resumes from the last key it returned. */
interface RecordScan {
  next(): number | undefined;
  /** Drops live iterators; the next pull re-seeks from the last position. */
  release(): void;
}

class CollectionScan implements RecordScan {
  private iterator: Iterator<[number, Buffer]> | undefined;
  private last: number | undefined;

  constructor(
    private readonly collection: Collection,
    private readonly backward: boolean,
    /** A tailable cursor on a capped collection: its position must not have been capped away. */
    private readonly tailable: boolean,
  ) {}

  next(): number | undefined {
    const { records } = this.collection;
    if (this.tailable && !this.iterator && this.last !== undefined && !this.collection.has(this.last)) {
      throw new CommandError(
        ErrorCode.CappedPositionLost,
        `CollectionScan died due to position in capped collection being deleted. Last seen record id: RecordId(${this.last})`,
      );
    }
    this.iterator ??= this.backward
      ? records.entriesReversed(this.last, undefined, this.last !== undefined)
      : records.entries(this.last === undefined ? undefined : this.last + 1);
    const step = this.iterator.next();
    if (step.done) return undefined;
    this.last = step.value[0];
    return this.last;
  }

  release(): void {
    this.iterator = undefined;
  }
}

class IndexScan implements RecordScan {
  private at = 0;
  private iterator: Iterator<[IndexKey, undefined]> | undefined;
  private last: IndexKey | undefined;

  constructor(
    private readonly plan: Extract<QueryPlan, { kind: 'index' }>,
    private readonly stats: ScanStats,
  ) {}

  next(): number | undefined {
    const { index, intervals, backward } = this.plan;
    const n = index.fields.length;
    while (this.at < intervals.length) {
      const interval = intervals[backward ? intervals.length - 1 - this.at : this.at]!;
      let skipLast = false;
      if (!this.iterator) {
        if (backward) {
          this.iterator = index.tree.entriesReversed(this.last ?? interval.end, undefined, this.last !== undefined);
        } else {
          this.iterator = index.tree.entries(this.last ?? interval.start);
          skipLast = this.last !== undefined;
        }
      }
      const step = this.iterator.next();
      if (step.done) {
        this.nextInterval();
        continue;
      }
      const key = step.value[0];
      if (skipLast && index.compare(key, this.last!) === 0) continue;
      const outside = backward ? index.compare(key, interval.start) < 0 : index.compare(key, interval.end) > 0;
      if (outside) {
        this.nextInterval();
        continue;
      }
      this.last = key;
      this.stats.keysExamined++;
      return key[n] as number;
    }
    return undefined;
  }

  release(): void {
    this.iterator = undefined;
  }

  private nextInterval(): void {
    this.at++;
    this.iterator = undefined;
    this.last = undefined;
  }
}

export interface FindSpec {
  filter: Document;
  sort: SortSpec;
  skip: number;
  /** 0: no limit. */
  limit: number;
  hint?: unknown;
  /** `let` variables for `$expr`. */
  variables?: Document;
  /** maxTimeMS as an absolute time. */
  deadline?: number;
}

/**
 * Runs a find: index or collection scan, filter, sort, skip and limit, one
 * result per `next()`. When the plan yields the sort order, results stream and
 * the scan stops at the limit; otherwise every match is read and sorted first.
 */
export class FindExecution {
  readonly stats: ScanStats = { keysExamined: 0, docsExamined: 0, nReturned: 0 };
  readonly plan: QueryPlan | undefined;
  private readonly scan: RecordScan | undefined;
  private readonly query: Matcher | undefined;
  private readonly seen: Set<number> | undefined;
  private skipped = 0;
  private sorted: Match[] | undefined;
  private sortedAt = 0;

  constructor(
    private readonly collection: Collection | undefined,
    private readonly spec: FindSpec,
    /** Whether each match needs its typed document (updates, sorting, aggregation). */
    private readonly withDocs: boolean,
    tailable = false,
  ) {
    if (!collection) {
      compileFilter(spec.filter, spec); // still refuse an invalid filter
      return;
    }
    this.plan = planQuery(collection, spec.filter, spec.sort, spec.hint);
    // An exact plan's bounds are the whole filter: no document needs matching.
    this.query = this.plan.exact ? undefined : compileFilter(spec.filter, spec);
    this.scan =
      this.plan.kind === 'index' ? new IndexScan(this.plan, this.stats) : new CollectionScan(collection, this.plan.backward, tailable);
    if (this.plan.kind === 'index' && this.plan.index.multikey) this.seen = new Set();
  }

  next(): Match | undefined {
    if (!this.plan) return undefined;
    if (this.spec.limit > 0 && this.stats.nReturned >= this.spec.limit) return undefined;
    const match = this.plan.sortProvided ? this.nextStreamed() : this.nextSorted();
    if (match) this.stats.nReturned++;
    return match;
  }

  /** Counts the remaining results; an exact index plan counts keys without reading documents. */
  count(): number {
    let n = 0;
    if (this.plan?.exact && this.plan.sortProvided && this.scan) {
      while (this.scan.next() !== undefined && (this.spec.limit === 0 || n < this.spec.limit + this.spec.skip)) n++;
      return Math.max(0, Math.min(n - this.spec.skip, this.spec.limit || Infinity));
    }
    while (this.next()) n++;
    return n;
  }

  release(): void {
    this.scan?.release();
  }

  private nextStreamed(): Match | undefined {
    for (;;) {
      const match = this.nextMatch(this.withDocs);
      if (!match) return undefined;
      if (this.skipped < this.spec.skip) {
        this.skipped++;
        continue;
      }
      return match;
    }
  }

  private nextSorted(): Match | undefined {
    if (!this.sorted) {
      const matches: Match[] = [];
      for (let m = this.nextMatch(true); m; m = this.nextMatch(true)) matches.push(m);
      const { sort } = this.spec;
      const keyed = matches.map((m) => ({ m, keys: sort.map(([field, dir]) => sortValue(m.doc!, field, dir)) }));
      keyed.sort((a, b) => {
        for (let i = 0; i < sort.length; i++) {
          const c = compareValues(a.keys[i], b.keys[i]);
          if (c !== 0) return c * sort[i]![1];
        }
        return 0;
      });
      const end = this.spec.limit > 0 ? this.spec.skip + this.spec.limit : undefined;
      this.sorted = keyed.slice(this.spec.skip, end).map(({ m }) => m);
    }
    return this.sorted[this.sortedAt++];
  }

  private nextMatch(withDoc: boolean): Match | undefined {
    for (;;) {
      const rid = this.scan!.next();
      if (rid === undefined) return undefined;
      if (this.seen) {
        if (this.seen.has(rid)) continue;
        this.seen.add(rid);
      }
      const raw = this.collection!.get(rid);
      if (!raw) continue;
      this.stats.docsExamined++;
      if (this.spec.deadline !== undefined && (this.stats.docsExamined & 1023) === 0 && Date.now() > this.spec.deadline) {
        throw new CommandError(ErrorCode.MaxTimeMSExpired, 'operation exceeded time limit');
      }
      if (this.query) {
        const doc = typed(raw);
        if (this.query.test(doc)) return { rid, raw, doc };
        continue;
      }
      return withDoc ? { rid, raw, doc: typed(raw) } : { rid, raw };
    }
  }
}

/** Every match of a filter, with documents, for writes (read fully before anything changes). */
export function findMatches(collection: Collection | undefined, spec: Omit<FindSpec, 'skip'>): Required<Match>[] {
  const execution = new FindExecution(collection, { ...spec, skip: 0 }, true);
  const out: Required<Match>[] = [];
  for (let m = execution.next(); m; m = execution.next()) out.push(m as Required<Match>);
  return out;
}
