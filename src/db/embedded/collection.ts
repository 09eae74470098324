import { UUID, type Document } from 'bson';
import { BTree } from './btree.js';
import { CommandError, ErrorCode } from './errors.js';
import { Index, type IndexDefinition } from './indexes.js';
import { promoted } from './values.js';

/**
 * One collection: documents kept as their BSON bytes under a record id
 * (compact, and sent back to clients without re-encoding), plus B-tree
 * indexes on record ids. Every method is synchronous, so each command sees
 * and leaves a consistent collection.
 */
export class Collection {
  readonly uuid = new UUID();
  readonly records: BTree<number, Buffer> = new BTree<number, Buffer>(undefined, undefined, 64);
  readonly indexes: Index[];
  private nextRid = 1;
  /** Total BSON bytes of the stored documents. */
  dataSize = 0;

  constructor(
    readonly db: string,
    readonly name: string,
    readonly options: Document = {},
  ) {
    this.indexes = [new Index({ name: '_id_', key: { _id: 1 }, unique: true })];
  }

  get ns(): string {
    return `${this.db}.${this.name}`;
  }

  get idIndex(): Index {
    return this.indexes[0]!;
  }

  get(rid: number): Buffer | undefined {
    return this.records.get(rid);
  }

  /** Stores a new document (its bytes must not be shared); fails on a duplicate key. */
  insert(raw: Buffer, doc: Document): number {
    const rid = this.nextRid;
    const keys = this.indexes.map((index) => index.keysOf(doc));
    this.checkUnique(keys, rid);
    this.nextRid++;
    this.records.set(rid, raw);
    this.dataSize += raw.length;
    this.indexes.forEach((index, i) => index.insert(keys[i]!, rid));
    return rid;
  }

  /** Replaces a stored document, moving only the index entries whose keys changed. */
  replace(rid: number, raw: Buffer, doc: Document, previous: Document): void {
    const keys = this.indexes.map((index) => index.keysOf(doc));
    this.checkUnique(keys, rid);
    this.indexes.forEach((index, i) => {
      const before = index.keysOf(previous);
      const after = keys[i]!;
      if (sameKeys(index, before, after)) return;
      index.remove(before, rid);
      index.insert(after, rid);
    });
    this.dataSize += raw.length - (this.records.get(rid)?.length ?? 0);
    this.records.set(rid, raw);
  }

  remove(rid: number, doc: Document): void {
    for (const index of this.indexes) index.remove(index.keysOf(doc), rid);
    this.dataSize -= this.records.get(rid)?.length ?? 0;
    this.records.delete(rid);
  }

  index(name: string): Index | undefined {
    return this.indexes.find((index) => index.name === name);
  }

  /** Builds new indexes over the existing documents; either all are added or none. */
  addIndexes(definitions: IndexDefinition[]): void {
    const built = definitions.map((definition) => new Index(definition));
    for (const [rid, raw] of this.records.entries()) {
      const doc = promoted(raw);
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
  }

  dropIndex(name: string): void {
    const at = this.indexes.findIndex((index) => index.name === name);
    if (at === 0) throw new CommandError(ErrorCode.InvalidOptions, 'cannot drop _id index');
    if (at < 0) throw new CommandError(ErrorCode.IndexNotFound, `index not found with name [${name}]`);
    this.indexes.splice(at, 1);
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
