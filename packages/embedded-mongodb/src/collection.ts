import { type Document, UUID } from 'bson';

import { BTree } from './btree.js';
import { type CollectionSettings, defaultSettings } from './collection-options.js';
import { CommandError, ErrorCode } from './errors.js';
import { Index, INDEX_MAX, INDEX_MIN, type IndexBuildStats, type IndexDefinition } from './indexes.js';
import type { Oplog, UpdateDescription } from './oplog.js';
import { asBuffer, documentFromElements, rawElements } from './raw-bson.js';
import type { Storage, StoredCollection } from './storage.js';
import { typed } from './values.js';

/**
 * Stored documents are copied into large chunks: small Buffers from Node's
 * shared pool would pin 8 KiB slabs that also hold short-lived garbage, which
 * roughly doubles the memory a large collection takes.
 */
class Arena {
  private static readonly CHUNK = 4 * 1024 * 1024;
  private chunk = Buffer.allocUnsafeSlow(0);
  private used = 0;
  /** Bytes written into chunks, live or not: replaced and removed documents leave holes. */
  chunkedBytes = 0;

  store(bytes: Uint8Array): Buffer {
    if (bytes.length > Arena.CHUNK / 8) {
      const own = Buffer.allocUnsafeSlow(bytes.length);
      own.set(bytes);
      return own;
    }
    if (this.used + bytes.length > this.chunk.length) {
      this.chunk = Buffer.allocUnsafeSlow(Arena.CHUNK);
      this.used = 0;
    }
    const stored = this.chunk.subarray(this.used, this.used + bytes.length);
    stored.set(bytes);
    this.used += bytes.length;
    this.chunkedBytes += bytes.length;
    return stored;
  }
}

/**
 * One collection: documents kept as their BSON bytes under a record id
 * (compact, and sent back to clients without re-encoding), plus B-tree
 * indexes on record ids. Every method is synchronous, so each command sees
 * and leaves a consistent collection.
 */
export class Collection {
  readonly records: BTree<number, Buffer> = new BTree<number, Buffer>(undefined, undefined, 64);
  readonly indexes: Index[];
  private nextRid = 1;
  /** Its uuid in hex: its documents' key prefix in the data directory. */
  private readonly storageKey: string;
  private arena = new Arena();
  /** Total BSON bytes of the stored documents. */
  dataSize = 0;

  constructor(
    public db: string,
    public name: string,
    /** Where committed changes are recorded. */
    private readonly oplog: Oplog,
    readonly settings: CollectionSettings = defaultSettings(),
    /** Where its data lasts; undefined in memory. */
    private readonly storage?: Storage,
    readonly uuid: UUID = new UUID(),
  ) {
    this.indexes = [new Index({ name: '_id_', key: { _id: 1 }, unique: true })];
    this.storageKey = uuid.toHexString();
  }

  /** What the data directory's catalog keeps of it. */
  stored(): StoredCollection {
    return {
      uuid: this.uuid.toHexString(),
      db: this.db,
      name: this.name,
      options: this.settings.shown,
      indexes: this.indexes.slice(1).map((index) => ({ ...index.definition })),
    };
  }

  /** Records its name, options and indexes in the data directory (after any change to them). */
  saveDefinition(): void {
    this.storage?.saveCollection(this.stored());
  }

  /** Forgets its documents and definition in the data directory (it was dropped). */
  forgetStored(): void {
    this.storage?.dropCollection(this.storageKey, this.records.keys());
  }

  /** Takes back a document read from the data directory at open, under its record id, into every index. */
  restore(rid: number, raw: Buffer): void {
    const doc = this.keyDocument(raw);
    const keys = this.indexes.map((index) => index.keysOf(doc));
    const stored = this.arena.store(raw);
    this.records.set(rid, stored);
    this.dataSize += raw.length;
    this.indexes.forEach((index, i) => index.insert(keys[i]!, rid));
    if (rid >= this.nextRid) this.nextRid = rid + 1;
  }

  get ns(): string {
    return `${this.db}.${this.name}`;
  }

  /** A rename keeps the data, indexes and identity. */
  moveTo(db: string, name: string): void {
    this.db = db;
    this.name = name;
    this.saveDefinition();
  }

  /**
   * Refuses a document the collection's validator rejects (with
   * validationLevel "moderate", only when the document it replaces was valid).
   */
  validate(doc: Document, previous?: Document): void {
    const validation = this.settings.validation;
    if (!validation || validation.level === 'off') return;
    if (validation.level === 'moderate' && previous && !validation.matcher.test(previous)) return;
    if (validation.matcher.test(doc) || validation.action === 'warn') return;
    throw new CommandError(ErrorCode.DocumentValidationFailure, 'Document failed validation', {
      errInfo: {
        failingDocumentId: doc._id,
        details: { operatorName: '$and', specifiedAs: validation.validator, reason: 'the document does not satisfy the validator' },
      },
    });
  }

  get idIndex(): Index {
    return this.indexes[0]!;
  }

  get(rid: number): Buffer | undefined {
    return this.records.get(rid);
  }

  /** The stored document with this `_id`, through the `_id` index. */
  findById(id: unknown): Buffer | undefined {
    const key = [id];
    const entry = this.idIndex.tree.nextHigherKey(key.concat(INDEX_MIN));
    if (!entry || this.idIndex.compare(entry, key.concat(INDEX_MAX)) > 0) return undefined;
    return this.records.get(entry[1] as number);
  }

  /** Stores a copy of a new document (decoded `doc` if at hand); fails on a duplicate key. */
  insert(raw: Uint8Array, doc: Document = this.keyDocument(raw)): number {
    const rid = this.nextRid;
    const keys = this.indexes.map((index) => index.keysOf(doc));
    this.checkUnique(keys, rid);
    this.nextRid++;
    const stored = this.arena.store(raw);
    this.records.set(rid, stored);
    this.storage?.putDocument(this.storageKey, rid, stored);
    this.dataSize += raw.length;
    this.indexes.forEach((index, i) => index.insert(keys[i]!, rid));
    this.oplog.append({ operation: 'insert', db: this.db, collection: this.name, id: doc._id, after: stored });
    if (this.settings.capped) this.enforceCap(rid);
    return rid;
  }

  /** A capped collection drops its oldest documents once it holds more than its size or count. */
  private enforceCap(newest: number): void {
    const { size, max } = this.settings.capped!;
    while (this.dataSize > size || (max !== undefined && this.records.size > max)) {
      const oldest = this.records.minKey();
      if (oldest === undefined || oldest === newest) break;
      this.removeRecord(oldest, typed(this.records.get(oldest)!));
    }
  }

  /**
   * Replaces a stored document, moving only the index entries whose keys
   * changed; `operation` says whether the client sent update operators or a
   * whole replacement (change streams report them differently).
   */
  replace(
    rid: number,
    raw: Uint8Array,
    doc: Document,
    previous: Document,
    change: { operation: 'update' | 'replace'; description?: UpdateDescription },
  ): void {
    const keys = this.indexes.map((index) => index.keysOf(doc));
    this.checkUnique(keys, rid);
    this.indexes.forEach((index, i) => {
      const before = index.keysOf(previous);
      const after = keys[i]!;
      if (sameKeys(index, before, after)) return;
      index.remove(before, rid);
      index.insert(after, rid);
    });
    const before = this.records.get(rid);
    this.dataSize += raw.length - (before?.length ?? 0);
    const stored = this.arena.store(raw);
    this.records.set(rid, stored);
    this.storage?.putDocument(this.storageKey, rid, stored);
    // The version before is kept only where a change stream needs it: to describe a pipeline-style update, or as a pre-image.
    const keepBefore = this.settings.preImages || (change.operation === 'update' && !change.description);
    this.oplog.append({
      ...change,
      db: this.db,
      collection: this.name,
      id: doc._id,
      before: keepBefore ? before : undefined,
      after: stored,
    });
    this.compactWhenWasteful();
  }

  remove(rid: number, doc: Document): void {
    const before = this.settings.preImages ? this.records.get(rid) : undefined;
    this.removeRecord(rid, doc);
    this.oplog.append({ operation: 'delete', db: this.db, collection: this.name, id: doc._id, before });
  }

  private removeRecord(rid: number, doc: Document): void {
    for (const index of this.indexes) index.remove(index.keysOf(doc), rid);
    this.dataSize -= this.records.get(rid)?.length ?? 0;
    this.records.delete(rid);
    this.storage?.removeDocument(this.storageKey, rid);
    this.compactWhenWasteful();
  }

  /** Copies live documents into fresh chunks once holes outweigh them (amortized O(1) per write). */
  private compactWhenWasteful(): void {
    const waste = this.arena.chunkedBytes - this.dataSize;
    if (waste < 64 * 1024 * 1024 || waste < this.dataSize) return;
    const fresh = new Arena();
    this.records.editAll((_rid, raw) => ({ value: fresh.store(raw) }));
    this.arena = fresh;
  }

  /**
   * The fields of a stored document that its index keys read, decoded: much
   * cheaper than decoding a whole document with long strings in it.
   */
  private keyDocument(raw: Uint8Array): Document {
    if (this.indexes.some((index) => index.definition.partialFilterExpression)) return typed(raw);
    const wanted = new Set(this.indexes.flatMap((index) => index.fields.map((field) => field.split('.')[0]!)));
    const bytes = asBuffer(raw);
    return typed(
      documentFromElements(
        bytes,
        rawElements(bytes).filter((element) => wanted.has(element.name)),
      ),
    );
  }

  index(name: string): Index | undefined {
    return this.indexes.find((index) => index.name === name);
  }

  /** Whether a record is still stored (a tailable cursor's position may have been capped away). */
  has(rid: number): boolean {
    return this.records.has(rid);
  }

  /**
   * Builds new indexes in one pass over the documents; either all are added or
   * none, and with none requested no document is read. `stats` counts the build.
   */
  addIndexes(definitions: IndexDefinition[], stats?: IndexBuildStats): void {
    if (definitions.length === 0) return;
    this.buildIndexes(definitions, stats);
    this.saveDefinition();
  }

  /** Adds the indexes the data directory's catalog names, before its documents are restored. */
  restoreIndexes(definitions: IndexDefinition[]): void {
    this.indexes.push(...definitions.map((definition) => new Index(definition)));
  }

  private buildIndexes(definitions: IndexDefinition[], stats?: IndexBuildStats): void {
    const built = definitions.map((definition) => new Index(definition));
    if (stats) {
      stats.total++;
      stats.phases.scanCollection++;
    }
    for (const [rid, raw] of this.records.entries()) {
      const doc = typed(raw);
      for (const index of built) {
        const keys = index.keysOf(doc);
        const duplicate = index.conflict(keys, rid);
        if (duplicate) {
          throw index.duplicateKeyError(
            this.ns,
            duplicate,
            `Index build failed: ${this.uuid.toHexString()}: Collection ${this.ns} ( ${this.uuid.toHexString()} ) :: caused by :: `,
          );
        }
        index.insert(keys, rid);
      }
    }
    this.indexes.push(...built);
    if (stats) stats.phases.commit++;
  }

  dropIndex(name: string): void {
    const at = this.indexes.findIndex((index) => index.name === name);
    if (at === 0) throw new CommandError(ErrorCode.InvalidOptions, 'cannot drop _id index');
    if (at < 0) throw new CommandError(ErrorCode.IndexNotFound, `index not found with name [${name}]`);
    this.indexes.splice(at, 1);
    this.saveDefinition();
  }

  private checkUnique(keys: unknown[][][], rid: number): void {
    this.indexes.forEach((index, i) => {
      const duplicate = index.conflict(keys[i]!, rid);
      if (duplicate) throw index.duplicateKeyError(this.ns, duplicate);
    });
  }
}

function sameKeys(index: Index, a: unknown[][], b: unknown[][]): boolean {
  return a.length === b.length && a.every((key, i) => index.compare([...key, 0], [...b[i]!, 0]) === 0);
}
