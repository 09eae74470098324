import type { Catalog } from './catalog.js';
import type { Clock } from './oplog.js';
import { typed } from './values.js';

/**
 * mongod's TTL monitor: every pass deletes the documents whose date in a
 * single-field TTL index, plus the index's expireAfterSeconds, lies in the
 * past (for an array of dates, the earliest one counts).
 */
export class TtlMonitor {
  private timer: NodeJS.Timeout | undefined;
  enabled = true;

  constructor(
    private readonly catalog: Catalog,
    private readonly clock: Clock,
    private intervalMs: number,
  ) {
    this.schedule();
  }

  get interval(): number {
    return this.intervalMs;
  }

  /** Changes the time between passes (`setParameter: {ttlMonitorSleepSecs}`). */
  setInterval(ms: number): void {
    this.intervalMs = ms;
    this.schedule();
  }

  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      if (this.enabled) this.pass();
      this.schedule();
    }, this.intervalMs);
    this.timer.unref();
  }

  /** One pass over every TTL index. */
  pass(): void {
    const now = this.clock.now();
    for (const db of this.catalog.databaseNames()) {
      for (const collection of this.catalog.collections(db)) {
        for (const index of collection.indexes) {
          const seconds = index.definition.expireAfterSeconds;
          if (seconds === undefined || index.fields.length !== 1) continue;
          const threshold = now - seconds * 1000;
          const expired = new Set<number>();
          for (const key of index.tree.keys()) {
            const value = key[0];
            if (value instanceof Date && value.getTime() < threshold) expired.add(key[1] as number);
          }
          for (const rid of expired) {
            const raw = collection.get(rid);
            if (raw) collection.remove(rid, typed(raw));
          }
        }
      }
    }
  }
}
