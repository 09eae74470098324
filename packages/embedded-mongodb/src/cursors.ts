import { randomBytes } from 'node:crypto';
import { CommandError, ErrorCode } from './errors.js';
import { MAX_BSON_OBJECT_SIZE, cursorReply } from './raw-bson.js';

/** Documents a cursor hands out, already encoded and projected. */
export interface DocumentSource {
  next(): Buffer | undefined;
  /** Called after each batch: the source must not hold live iterators across commands. */
  release(): void;
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

interface OpenCursor {
  id: bigint;
  ns: string;
  source: DocumentSource;
  /** A document read ahead (to know whether the cursor is exhausted) or that did not fit the last batch. */
  pending: Buffer | undefined;
  lastUsed: number;
}

export interface BatchOptions {
  batchSize?: number;
  /** Close the cursor after this batch whatever remains (find's singleBatch). */
  singleBatch?: boolean;
}

/** Open cursors of one server; any connection may continue any cursor, as with mongod. */
export class CursorRegistry {
  private readonly cursors = new Map<bigint, OpenCursor>();
  /** Ids start at a random point so that ids from an earlier server are not mistaken for live ones. */
  private nextId = BigInt(randomBytes(6).readUIntLE(0, 6)) + 1n;
  private readonly sweeper: NodeJS.Timeout;

  constructor() {
    this.sweeper = setInterval(() => this.sweep(), 60_000);
    this.sweeper.unref();
  }

  /** The reply to a command that opens a cursor: its first batch, and an id unless exhausted. */
  open(ns: string, source: DocumentSource, options: BatchOptions = {}): Buffer {
    const cursor: OpenCursor = { id: 0n, ns, source, pending: undefined, lastUsed: Date.now() };
    const { docs, exhausted } = takeBatch(cursor, options.batchSize ?? DEFAULT_FIRST_BATCH);
    const keep = !exhausted && !options.singleBatch;
    if (keep) {
      cursor.id = this.nextId++;
      this.cursors.set(cursor.id, cursor);
    }
    return cursorReply('firstBatch', docs, keep ? cursor.id : 0n, ns);
  }

  getMore(id: bigint, ns: string, batchSize: number | undefined): Buffer {
    const cursor = this.cursors.get(id);
    if (!cursor || cursor.ns !== ns) throw new CommandError(ErrorCode.CursorNotFound, `cursor id ${id} not found`);
    cursor.lastUsed = Date.now();
    const { docs, exhausted } = takeBatch(cursor, batchSize && batchSize > 0 ? batchSize : Infinity);
    if (exhausted) this.cursors.delete(id);
    return cursorReply('nextBatch', docs, exhausted ? 0n : id, ns);
  }

  /** Kills the given cursors; answers which existed. */
  kill(ids: bigint[]): { killed: bigint[]; notFound: bigint[] } {
    const killed: bigint[] = [];
    const notFound: bigint[] = [];
    for (const id of ids) (this.cursors.delete(id) ? killed : notFound).push(id);
    return { killed, notFound };
  }

  close(): void {
    clearInterval(this.sweeper);
    this.cursors.clear();
  }

  private sweep(): void {
    const now = Date.now();
    for (const [id, cursor] of this.cursors) if (now - cursor.lastUsed > IDLE_TIMEOUT_MS) this.cursors.delete(id);
  }
}

function takeBatch(cursor: OpenCursor, batchSize: number): { docs: Buffer[]; exhausted: boolean } {
  const docs: Buffer[] = [];
  let bytes = 0;
  let exhausted = false;
  while (docs.length < batchSize) {
    const doc = cursor.pending ?? cursor.source.next();
    cursor.pending = undefined;
    if (!doc) {
      exhausted = true;
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
  if (!exhausted && !cursor.pending && docs.length > 0) {
    cursor.pending = cursor.source.next();
    if (!cursor.pending) exhausted = true;
  }
  cursor.source.release();
  return { docs, exhausted };
}

