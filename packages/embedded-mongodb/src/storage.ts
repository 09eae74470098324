import { closeSync, mkdirSync, openSync, readFileSync, realpathSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';

import { type Binary, BSON, type Document, Timestamp } from 'bson';
import { type Database, open, type RootDatabase } from 'lmdb';

import type { ChangeEvent, UpdateDescription } from './oplog.js';
import { numberOf, typed } from './values.js';

/** What the catalog keeps of one collection: enough to build it again at open. */
export interface StoredCollection {
  uuid: string;
  db: string;
  name: string;
  /** The options `create` was given (as `listCollections` shows them, collMod's changes included). */
  options: Document;
  /** The index definitions besides `_id_`. */
  indexes: Document[];
}

/** What a data directory held when it was opened. */
export interface StoredState {
  collections: { collection: StoredCollection; documents: Iterable<{ rid: number; bytes: Buffer }> }[];
  /** The kept oplog, oldest first. */
  oplog: ChangeEvent[];
  /** Changes at or before this time are not kept; undefined for a new directory. */
  truncatedAt: Timestamp | undefined;
}

/** A data directory that cannot be used; the message is one line that says why. */
export class DataDirectoryError extends Error {}

const LOCK_FILE = 'engine.lock';

type OplogKey = [number, number];

/**
 * The engine's data on disk, in LMDB (through the `lmdb` package): one
 * environment per data directory, with the collections' catalog, their
 * documents under `[collection uuid, record id]`, and the oplog under its
 * cluster times. The engine applies each command in memory first; every
 * change it made is written in the same event turn, so the `lmdb` package
 * commits one command's changes in one transaction (all or nothing), and
 * {@link Storage.durable} says when they are flushed to disk: the server
 * sends no reply before then.
 */
export class Storage {
  private readonly root: RootDatabase;
  private readonly catalog: Database<Buffer, string>;
  private readonly documents: Database<Buffer, [string, number]>;
  private readonly oplog: Database<Buffer, OplogKey>;
  private readonly meta: Database<{ t: number; i: number }, string>;
  /** The last write not yet known to be flushed. */
  private lastWrite: Promise<unknown> | undefined;
  private unflushed = false;
  /** Whether the directory held no document when it was opened (collections and indexes alone are no data). */
  readonly isNew: boolean;

  private constructor(
    readonly directory: string,
    private readonly releaseLock: () => void,
  ) {
    this.root = open({ path: directory, maxDbs: 8 });
    this.catalog = this.root.openDB({ name: 'catalog', encoding: 'binary' });
    this.documents = this.root.openDB({ name: 'documents', encoding: 'binary' });
    this.oplog = this.root.openDB({ name: 'oplog', encoding: 'binary' });
    this.meta = this.root.openDB({ name: 'meta', encoding: 'msgpack' });
    this.isNew = [...this.documents.getKeys({ limit: 1 })].length === 0;
  }

  /**
   * Opens (creating it if needed) a data directory for this process only;
   * throws a {@link DataDirectoryError} when it cannot be used or another
   * process has it open.
   */
  static open(directory: string): Storage {
    try {
      mkdirSync(directory, { recursive: true, mode: 0o700 });
    } catch (error) {
      throw new DataDirectoryError(`data directory ${directory} cannot be created: ${reason(error)}`);
    }
    if (!statSync(directory).isDirectory()) throw new DataDirectoryError(`data directory ${directory} is not a directory`);
    const releaseLock = lock(directory);
    try {
      return new Storage(directory, releaseLock);
    } catch (error) {
      releaseLock();
      throw new DataDirectoryError(`data directory ${directory} cannot be opened: ${reason(error)}`);
    }
  }

  /** Everything the directory holds, for the engine to rebuild its memory from. */
  load(): StoredState {
    const collections = [...this.catalog.getRange()].map(({ value }) => {
      const collection = typed(value) as StoredCollection;
      return {
        collection,
        documents: this.documents
          .getRange({ start: [collection.uuid, 0], end: [collection.uuid, Number.MAX_SAFE_INTEGER] })
          .map(({ key, value: bytes }) => ({ rid: key[1], bytes })),
      };
    });
    const oplog = [...this.oplog.getRange()].map(({ value }) => decodeEvent(value));
    const truncated = this.meta.get('truncatedAt') as { t: number; i: number } | undefined;
    return { collections, oplog, truncatedAt: truncated ? new Timestamp(truncated) : undefined };
  }

  saveCollection(collection: StoredCollection): void {
    this.write(this.catalog.put(collection.uuid, Buffer.from(BSON.serialize(collection))));
  }

  /** Forgets a collection and its documents (record ids as stored). */
  dropCollection(uuid: string, rids: Iterable<number>): void {
    for (const rid of rids) this.write(this.documents.remove([uuid, rid]));
    this.write(this.catalog.remove(uuid));
  }

  putDocument(uuid: string, rid: number, bytes: Uint8Array): void {
    this.write(this.documents.put([uuid, rid], bytes as Buffer));
  }

  removeDocument(uuid: string, rid: number): void {
    this.write(this.documents.remove([uuid, rid]));
  }

  appendChange(event: ChangeEvent): void {
    this.write(this.oplog.put(oplogKey(event.clusterTime), encodeEvent(event)));
  }

  /** The oplog dropped its oldest change to stay within its size; history before it is lost. */
  dropChange(event: ChangeEvent): void {
    this.write(this.oplog.remove(oplogKey(event.clusterTime)));
    this.setTruncatedAt(event.clusterTime);
  }

  setTruncatedAt(time: Timestamp): void {
    this.write(this.meta.put('truncatedAt', { t: time.high, i: time.low }));
  }

  private write(promise: Promise<unknown>): void {
    this.lastWrite = promise;
    this.unflushed = true;
  }

  /** Whether writes were made that may not be on disk yet. */
  get pending(): boolean {
    return this.unflushed;
  }

  /** Resolves once every write made so far is committed and flushed to disk. */
  async durable(): Promise<void> {
    const last = this.lastWrite;
    if (!last) return;
    await last;
    await this.root.flushed;
    if (this.lastWrite === last) this.unflushed = false;
  }

  /** Waits for every write, then closes the files and the lock. */
  async close(): Promise<void> {
    await this.durable();
    await this.root.close();
    this.releaseLock();
  }
}

function oplogKey(time: Timestamp): OplogKey {
  return [time.high, time.low];
}

function encodeEvent(event: ChangeEvent): Buffer {
  // `id` may be any BSON value, undefined included: kept in a document of its own.
  return Buffer.from(BSON.serialize({ ...event, id: { value: event.id } }));
}

function decodeEvent(bytes: Buffer): ChangeEvent {
  const doc = typed(bytes);
  const event: ChangeEvent = {
    clusterTime: doc.clusterTime as Timestamp,
    wallTime: numberOf(doc.wallTime),
    operation: doc.operation as ChangeEvent['operation'],
    db: doc.db as string,
  };
  if (doc.collection !== undefined) event.collection = doc.collection as string;
  if ('value' in (doc.id as Document)) event.id = (doc.id as Document).value;
  if (doc.after !== undefined) event.after = Buffer.from((doc.after as Binary).buffer);
  if (doc.before !== undefined) event.before = Buffer.from((doc.before as Binary).buffer);
  if (doc.description !== undefined) event.description = doc.description as UpdateDescription;
  if (doc.to !== undefined) event.to = doc.to as { db: string; collection: string };
  return event;
}

/**
 * One process per data directory: a lock file holding the owner's pid,
 * created exclusively. A lock left by a process that no longer runs (killed),
 * or holding this process's own pid (a container's pid 1 after a restart),
 * is taken over.
 */
function lock(directory: string): () => void {
  const path = join(directory, LOCK_FILE);
  const here = realpathSync(directory);
  if (openHere.has(here)) throw inUse(directory, process.pid, path);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      openHere.add(here);
      return () => {
        openHere.delete(here);
        try {
          unlinkSync(path);
        } catch {
          // Already gone: nothing to release.
        }
      };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'EEXIST') throw new DataDirectoryError(`data directory ${directory} cannot be used: ${reason(error)}`);
    }
    const owner = Number.parseInt(readFileSafely(path), 10);
    if (Number.isInteger(owner) && owner !== process.pid && running(owner)) {
      throw inUse(directory, owner, path);
    }
    try {
      unlinkSync(path);
    } catch {
      // Another process took it over first: the next attempt says so.
    }
  }
  throw new DataDirectoryError(`data directory ${directory} is in use by another process (lock ${path})`);
}

/** The data directories this process has open (by real path): its own pid in a lock file is no proof of a stale lock. */
const openHere = new Set<string>();

function inUse(directory: string, pid: number, lockPath: string): DataDirectoryError {
  return new DataDirectoryError(
    `data directory ${directory} is in use by process ${pid} (lock ${lockPath}); one process at a time may open it`,
  );
}

function readFileSafely(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function reason(error: unknown): string {
  const e = error as NodeJS.ErrnoException;
  if (e.code === 'EACCES' || e.code === 'EPERM') return 'permission denied';
  if (e.code === 'ENOTDIR') return 'a part of its path is not a directory';
  if (e.code === 'EROFS') return 'the file system is read-only';
  if (e.code === 'ENOSPC') return 'no space left on the device';
  return e.message.split('\n')[0]!;
}
