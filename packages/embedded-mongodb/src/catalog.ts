import { type Document, UUID } from 'bson';

import { Collection } from './collection.js';
import { type CollectionSettings, defaultSettings, parseCreateOptions } from './collection-options.js';
import { CommandError, ErrorCode } from './errors.js';
import type { IndexDefinition } from './indexes.js';
import type { Oplog } from './oplog.js';
import type { Storage, StoredState } from './storage.js';
import { numberOf } from './values.js';

/** All databases and their collections; a database exists while it holds a collection. */
export class Catalog {
  private readonly databases = new Map<string, Map<string, Collection>>();

  /** `oplog`: where changes are recorded; `storage`: where the data lasts (undefined: in memory). */
  constructor(
    private readonly oplog: Oplog,
    private readonly storage?: Storage,
  ) {}

  /** Builds the collections a data directory holds again: options, documents, then their indexes from the documents. */
  restore(state: StoredState): void {
    for (const { collection: stored, documents } of state.collections) {
      const collection = new Collection(
        stored.db,
        stored.name,
        this.oplog,
        parseCreateOptions(stored.options),
        this.storage,
        UUID.createFromHexString(stored.uuid),
      );
      collection.restoreIndexes(stored.indexes.map(indexDefinition));
      for (const { rid, bytes } of documents) collection.restore(rid, bytes);
      this.add(collection);
    }
  }

  private add(collection: Collection): void {
    let collections = this.databases.get(collection.db);
    if (!collections) {
      collections = new Map();
      this.databases.set(collection.db, collections);
    }
    collections.set(collection.name, collection);
  }

  collection(db: string, name: string): Collection | undefined {
    return this.databases.get(db)?.get(name);
  }

  /** The collection, created on first write as MongoDB does. */
  ensureCollection(db: string, name: string): { collection: Collection; created: boolean } {
    const existing = this.collection(db, name);
    if (existing) return { collection: existing, created: false };
    return { collection: this.createCollection(db, name, defaultSettings()), created: true };
  }

  createCollection(db: string, name: string, settings: CollectionSettings): Collection {
    validateNamespace(db, name);
    let collections = this.databases.get(db);
    if (!collections) {
      collections = new Map();
      this.databases.set(db, collections);
    }
    if (collections.has(name)) {
      throw new CommandError(ErrorCode.NamespaceExists, `Collection ${db}.${name} already exists.`);
    }
    const collection = new Collection(db, name, this.oplog, settings, this.storage);
    collections.set(name, collection);
    collection.saveDefinition();
    return collection;
  }

  dropCollection(db: string, name: string): Collection | undefined {
    const collections = this.databases.get(db);
    const collection = collections?.get(name);
    if (!collections || !collection) return undefined;
    collections.delete(name);
    if (collections.size === 0) this.databases.delete(db);
    collection.forgetStored();
    this.oplog.append({ operation: 'drop', db, collection: name });
    return collection;
  }

  /** Renames a collection (replacing `to` when `dropTarget`), as one change. */
  renameCollection(from: { db: string; name: string }, to: { db: string; name: string }, dropTarget: boolean): void {
    const source = this.collection(from.db, from.name);
    if (!source) throw new CommandError(ErrorCode.NamespaceNotFound, 'source namespace does not exist');
    validateNamespace(to.db, to.name);
    if (this.collection(to.db, to.name)) {
      if (!dropTarget) throw new CommandError(ErrorCode.NamespaceExists, 'target namespace exists');
      this.dropCollection(to.db, to.name);
    }
    this.databases.get(from.db)!.delete(from.name);
    if (this.databases.get(from.db)!.size === 0) this.databases.delete(from.db);
    source.moveTo(to.db, to.name);
    this.add(source);
    this.oplog.append({ operation: 'rename', db: from.db, collection: from.name, to: { db: to.db, collection: to.name } });
  }

  /**
   * Replaces a collection's documents (indexes and options kept) with `docs`,
   * as `$out` does: written to a temporary collection renamed over the target,
   * so nothing changes if any document is refused.
   */
  replaceContents(db: string, name: string, docs: Buffer[]): void {
    const existing = this.collection(db, name);
    const temporary = `tmp.agg_out.${new UUID().toHexString()}`;
    const fresh = this.createCollection(db, temporary, existing?.settings ?? defaultSettings());
    try {
      if (existing) fresh.addIndexes(existing.indexes.slice(1).map((index) => index.definition));
      for (const doc of docs) fresh.insert(doc);
    } catch (error) {
      this.dropCollection(db, temporary);
      throw error;
    }
    this.renameCollection({ db, name: temporary }, { db, name }, true);
  }

  dropDatabase(db: string): void {
    for (const collection of this.collections(db)) this.dropCollection(db, collection.name);
    this.databases.delete(db);
    this.oplog.append({ operation: 'dropDatabase', db });
  }

  databaseNames(): string[] {
    return [...this.databases.keys()].sort();
  }

  collections(db: string): Collection[] {
    return [...(this.databases.get(db)?.values() ?? [])];
  }
}

export function validateNamespace(db: string, name: string): void {
  const badDb = db.length === 0 || /[/\\. "$*<>:|?\0]/.test(db);
  const badName = name.length === 0 || name.includes('\0') || name.includes('$') || name.startsWith('.');
  if (badDb || badName) {
    throw new CommandError(ErrorCode.InvalidNamespace, `Invalid namespace specified '${db}.${name}'`);
  }
}

/** An index definition as the catalog stored it (its TTL a plain number again). */
function indexDefinition(stored: Document): IndexDefinition {
  const definition = { ...stored } as IndexDefinition;
  if (stored.expireAfterSeconds !== undefined) definition.expireAfterSeconds = numberOf(stored.expireAfterSeconds);
  return definition;
}
