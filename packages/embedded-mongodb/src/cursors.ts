import { randomBytes } from 'node:crypto';

import type { Document } from 'bson';

import { CommandError, ErrorCode } from './errors.js';
import { cursorReply, MAX_BSON_OBJECT_SIZE } from './raw-bson.js';

/** Documents a cursor hands out, already encoded and projected. */
export interface DocumentSource {
  next(): Buffer | undefined;
  /** Called after each batch: the source must not hold live iterators across commands. */
  release(): void;
  /**
   * A tailable source (change stream, tailable cursor on a capped collection):
   * `next()` returning undefined means "nothing yet"; the cursor ends only
   * when `finished()` says so.
   */
  tailable?: { awaitData: boolean; finished(): boolean };
  /** Fields added to the cursor document of each batch (a change stream's postBatchResumeToken). */
  batchFields?(): Document;
  /** A change stream's: it reports the drop or rename of what it watches as events, so neither ends it. */
  changeStream?: boolean;
}

export function arraySource(docs: Buffer[]): DocumentSource {
  let at = 0;
  return { next: () => docs[at++], release: () => {} };
}

/** A batch never holds more document bytes than this, like MongoDB's 16 MiB reply limit. */
const MAX_BATCH_BYTES = MAX_BSON_OBJECT_SIZE;
export const DEFAULT_FIRST_BATCH = 101;
/** MongoDB's default cursorTimeoutMillis. */
const IDLE_TIMEOUT_MS = 10 * 60 * 1000;
/** How long a getMore on an awaitData cursor waits for data when maxTimeMS is not given. */
const DEFAULT_AWAIT_MS = 1000;

interface OpenCursor {
  id: bigint;
  ns: string;
  source: DocumentSource;
  /** A document read ahead (to know whether the cursor is exhausted) or that did not fit the last batch. */
  pending: Buffer | undefined;
  lastUsed: number;
  /** A getMore is running on it (awaiting data): another one is refused, as mongod does. */
  busy: boolean;
  /** Why the server ended it (its collection was dropped): the next getMore says so. */
  killed?: CommandError;
  noTimeout: boolean;
}

export interface BatchOptions {
  batchSize?: number;
  /** Close the cursor after this batch whatever remains (find's singleBatch). */
  singleBatch?: boolean;
  /** noCursorTimeout: never closed for being idle. */
  noTimeout?: boolean;
}

/** Resolves when something was written (or after `ms`). */
export type WaitForWrite = (ms: number) => Promise<boolean>;

/** Open cursors of one server; any connection may continue any cursor, as with mongod. */
export class CursorRegistry {
  private readonly cursors = new Map<bigint, OpenCursor>();
  /** Ids start at a random point so that ids from an earlier server are not mistaken for live ones. */
  private nextId = BigInt(randomBytes(6).readUIntLE(0, 6)) + 1n;
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly waitForWrite: WaitForWrite) {
    this.sweeper = setInterval(() => this.sweep(), 60_000);
    this.sweeper.unref();
  }

  /** The reply to a command that opens a cursor: its first batch, and an id unless exhausted. */
  open(ns: string, source: DocumentSource, options: BatchOptions = {}): Buffer {
    const cursor: OpenCursor = {
      id: 0n,
      ns,
      source,
      pending: undefined,
      lastUsed: Date.now(),
      busy: false,
      noTimeout: options.noTimeout === true,
    };
    const { docs, exhausted } = takeBatch(cursor, options.batchSize ?? DEFAULT_FIRST_BATCH);
    const keep = !exhausted && !options.singleBatch;
    if (keep) {
      cursor.id = this.nextId++;
      this.cursors.set(cursor.id, cursor);
    }
    return cursorReply('firstBatch', docs, keep ? cursor.id : 0n, ns, source.batchFields?.());
  }

  /**
   * The next batch. On an awaitData cursor with nothing to return, waits up
   * to `maxTimeMS` for a write to bring something. `checkedOut` is told, once
   * the cursor is found, whether it is a change stream's; what it throws ends
   * the cursor.
   */
  getMore(
    id: bigint,
    ns: string,
    batchSize: number | undefined,
    maxTimeMS: number | undefined,
    checkedOut: (changeStream: boolean) => void = () => {},
  ): Buffer | Promise<Buffer> {
    const cursor = this.cursors.get(id);
    if (!cursor || cursor.ns !== ns) throw new CommandError(ErrorCode.CursorNotFound, `cursor id ${id} not found`);
    if (cursor.busy) throw new CommandError(ErrorCode.CursorInUse, `Cursor id ${id} is already in use`);
    if (cursor.killed) {
      this.cursors.delete(id);
      throw cursor.killed;
    }
    try {
      checkedOut(cursor.source.changeStream === true);
    } catch (error) {
      this.cursors.delete(id);
      throw error;
    }
    cursor.lastUsed = Date.now();
    const size = batchSize && batchSize > 0 ? batchSize : Infinity;
    const first = this.batch(cursor, size);
    if (first.docs.length > 0 || first.exhausted || !cursor.source.tailable?.awaitData) return this.reply(cursor, first);
    const deadline = Date.now() + (maxTimeMS && maxTimeMS > 0 ? maxTimeMS : DEFAULT_AWAIT_MS);
    cursor.busy = true;
    const wait = async (): Promise<Buffer> => {
      try {
        for (;;) {
          const remaining = deadline - Date.now();
          if (remaining <= 0 || !(await this.waitForWrite(remaining))) break;
          if (!this.cursors.has(id)) throw new CommandError(ErrorCode.CursorNotFound, `cursor id ${id} not found`);
          const next = this.batch(cursor, size);
          if (next.docs.length > 0 || next.exhausted) return this.reply(cursor, next);
        }
        return this.reply(cursor, this.batch(cursor, size));
      } finally {
        cursor.busy = false;
        cursor.lastUsed = Date.now();
      }
    };
    return wait();
  }

  private batch(cursor: OpenCursor, size: number): { docs: Buffer[]; exhausted: boolean } {
    try {
      return takeBatch(cursor, size);
    } catch (error) {
      this.cursors.delete(cursor.id);
      throw error;
    }
  }

  private reply(cursor: OpenCursor, { docs, exhausted }: { docs: Buffer[]; exhausted: boolean }): Buffer {
    if (exhausted) this.cursors.delete(cursor.id);
    return cursorReply('nextBatch', docs, exhausted ? 0n : cursor.id, cursor.ns, cursor.source.batchFields?.());
  }

  /** Kills the given cursors; answers which existed. */
  kill(ids: bigint[]): { killed: bigint[]; notFound: bigint[] } {
    const killed: bigint[] = [];
    const notFound: bigint[] = [];
    for (const id of ids) (this.cursors.delete(id) ? killed : notFound).push(id);
    return { killed, notFound };
  }

  /** Ends the queries open on a collection that was dropped or renamed (change streams see the drop themselves). */
  killNamespace(ns: string, reason: string): void {
    for (const cursor of this.cursors.values()) {
      if (cursor.ns === ns && !cursor.source.changeStream)
        cursor.killed = new CommandError(ErrorCode.QueryPlanKilled, `collection ${reason}`);
    }
  }

  close(): void {
    clearInterval(this.sweeper);
    this.cursors.clear();
  }

  private sweep(): void {
    const now = Date.now();
    for (const [id, cursor] of this.cursors)
      if (!cursor.busy && !cursor.noTimeout && now - cursor.lastUsed > IDLE_TIMEOUT_MS) this.cursors.delete(id);
  }
}

function takeBatch(cursor: OpenCursor, batchSize: number): { docs: Buffer[]; exhausted: boolean } {
  const docs: Buffer[] = [];
  const { tailable } = cursor.source;
  let bytes = 0;
  let exhausted = false;
  while (docs.length < batchSize) {
    const doc = cursor.pending ?? cursor.source.next();
    cursor.pending = undefined;
    if (!doc) {
      exhausted = tailable ? tailable.finished() : true;
      break;
    }
    if (docs.length > 0 && bytes + doc.length > MAX_BATCH_BYTES) {
      cursor.pending = doc;
      break;
    }
    docs.push(doc);
    bytes += doc.length;
  }
  // Read one ahead so that a cursor with nothing left is reported closed (id 0) right away.
  if (!tailable && !exhausted && !cursor.pending && docs.length > 0) {
    cursor.pending = cursor.source.next();
    if (!cursor.pending) exhausted = true;
  }
  if (tailable && !exhausted && docs.length < batchSize && tailable.finished()) exhausted = true;
  cursor.source.release();
  return { docs, exhausted };
}
