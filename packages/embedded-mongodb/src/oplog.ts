import { Timestamp } from 'bson';

import type { Storage, StoredState } from './storage.js';

/** Where the engine reads the time: injectable so tests move time instead of sleeping. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/**
 * Cluster time as a replica set member keeps it: a Timestamp of seconds and
 * an increment, strictly increasing for every write.
 */
export class ClusterClock {
  private seconds = 0;
  private increment = 0;

  constructor(private readonly clock: Clock) {}

  tick(): Timestamp {
    const seconds = Math.floor(this.clock.now() / 1000);
    if (seconds > this.seconds) {
      this.seconds = seconds;
      this.increment = 1;
    } else {
      this.increment++;
    }
    return new Timestamp({ t: this.seconds, i: this.increment });
  }

  /** Goes on after `time` (kept by a data directory): every later tick is past it, whatever the wall clock says. */
  advancePast(time: Timestamp): void {
    if (time.high > this.seconds || (time.high === this.seconds && time.low > this.increment)) {
      this.seconds = time.high;
      this.increment = time.low;
    }
  }
}

/** The paths an update's operators wrote and removed (dotted, array indexes resolved). */
export interface UpdateDescription {
  updated: string[];
  removed: string[];
}

export type ChangeOperation = 'insert' | 'update' | 'replace' | 'delete' | 'drop' | 'rename' | 'dropDatabase';

/** One committed change, as change streams read it. */
export interface ChangeEvent {
  clusterTime: Timestamp;
  /** Milliseconds since the epoch, by the engine's clock. */
  wallTime: number;
  operation: ChangeOperation;
  db: string;
  /** Absent for dropDatabase. */
  collection?: string;
  /** The document's `_id` (document operations). */
  id?: unknown;
  /** The document after the change (insert, update, replace). */
  after?: Buffer;
  /** The document before the change (update, replace, delete). */
  before?: Buffer;
  /** update: what the operators changed; absent for pipeline-style updates (described by difference). */
  description?: UpdateDescription;
  /** rename: the new namespace. */
  to?: { db: string; collection: string };
}

/** Bytes an event holds on to, for the size bound. */
function sizeOf(event: ChangeEvent): number {
  return 200 + (event.after?.length ?? 0) + (event.before?.length ?? 0);
}

/**
 * The engine's oplog: every committed change in commit order, bounded by
 * size like mongod's capped oplog. Change streams read it from any position
 * still held and wait on it for new entries.
 */
export class Oplog {
  private readonly events: ChangeEvent[] = [];
  /** Index in `events` of the oldest live entry (entries before it were dropped). */
  private head = 0;
  private bytes = 0;
  /** Positions stay valid when dropped entries are spliced away: position = offset + index. */
  private offset = 0;
  /** Changes at or before this time are no longer held; resuming from before it is impossible. */
  private truncatedAt: Timestamp;
  private readonly waiters = new Set<() => void>();

  /** `storage` keeps the oplog in a data directory; `restored` is what it held at open. */
  constructor(
    readonly clusterClock: ClusterClock,
    private readonly clock: Clock,
    private readonly maxBytes: number,
    private readonly storage?: Storage,
    restored?: Pick<StoredState, 'oplog' | 'truncatedAt'>,
  ) {
    if (restored?.truncatedAt) {
      this.truncatedAt = restored.truncatedAt;
      clusterClock.advancePast(restored.truncatedAt);
      for (const event of restored.oplog) {
        this.events.push(event);
        this.bytes += sizeOf(event);
        clusterClock.advancePast(event.clusterTime);
      }
    } else {
      this.truncatedAt = clusterClock.tick();
      storage?.setTruncatedAt(this.truncatedAt);
    }
  }

  /** Records a change; `event` becomes the oplog entry (callers pass a fresh object). */
  append(event: Omit<ChangeEvent, 'clusterTime' | 'wallTime'>): void {
    const full = event as ChangeEvent;
    full.clusterTime = this.clusterClock.tick();
    full.wallTime = this.clock.now();
    this.events.push(full);
    this.storage?.appendChange(full);
    this.bytes += sizeOf(full);
    while (this.bytes > this.maxBytes && this.head < this.events.length - 1) {
      const dropped = this.events[this.head]!;
      this.events[this.head] = undefined as unknown as ChangeEvent;
      this.head++;
      this.bytes -= sizeOf(dropped);
      this.truncatedAt = dropped.clusterTime;
      this.storage?.dropChange(dropped);
    }
    if (this.head > 1024 && this.head * 2 > this.events.length) {
      this.events.splice(0, this.head);
      this.offset += this.head;
      this.head = 0;
    }
    for (const wake of [...this.waiters]) wake();
  }

  /** The newest cluster time (of the last change, or of start). */
  latest(): Timestamp {
    return this.events.length > this.head ? this.events[this.events.length - 1]!.clusterTime : this.truncatedAt;
  }

  /** Whether every change after `time` is still held. */
  holdsAfter(time: Timestamp): boolean {
    return time.compare(this.truncatedAt) >= 0;
  }

  /** The position of the first change after `time`. */
  positionAfter(time: Timestamp): number {
    return this.firstPosition((t) => t.compare(time) > 0);
  }

  /** The position of the first change at or after `time`. */
  positionFrom(time: Timestamp): number {
    return this.firstPosition((t) => t.compare(time) >= 0);
  }

  /** Binary search: cluster times increase along the oplog. */
  private firstPosition(wanted: (time: Timestamp) => boolean): number {
    let low = this.head;
    let high = this.events.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (wanted(this.events[mid]!.clusterTime)) high = mid;
      else low = mid + 1;
    }
    return this.offset + low;
  }

  /** The change at a position; undefined past the end or when it was dropped. */
  at(position: number): ChangeEvent | undefined {
    const index = position - this.offset;
    if (index < this.head) return undefined;
    return this.events[index];
  }

  /** Whether the change at `position` was dropped to bound the oplog's size. */
  dropped(position: number): boolean {
    return position - this.offset < this.head;
  }

  /** Resolves on the next change, or after `ms`; false when it timed out. */
  waitForChange(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.waiters.delete(wake);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.waiters.delete(wake);
        resolve(false);
      }, ms);
      this.waiters.add(wake);
    });
  }

  /** Wakes every waiting reader (the server is closing). */
  close(): void {
    for (const wake of [...this.waiters]) wake();
  }
}
