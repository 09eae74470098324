import type { Document } from 'bson';
import { Collection } from './collection.js';
import { CommandError, ErrorCode } from './errors.js';

/** All databases and their collections; a database exists while it holds a collection. */
export class Catalog {
  private readonly databases = new Map<string, Map<string, Collection>>();

  collection(db: string, name: string): Collection | undefined {
    return this.databases.get(db)?.get(name);
  }

  /** The collection, created on first write as MongoDB does. */
  ensureCollection(db: string, name: string): { collection: Collection; created: boolean } {
    const existing = this.collection(db, name);
    if (existing) return { collection: existing, created: false };
    return { collection: this.createCollection(db, name, {}), created: true };
  }

  createCollection(db: string, name: string, options: Document): Collection {
    validateNamespace(db, name);
    let collections = this.databases.get(db);
    if (!collections) {
      collections = new Map();
      this.databases.set(db, collections);
    }
    if (collections.has(name)) {
      throw new CommandError(ErrorCode.NamespaceExists, `Collection ${db}.${name} already exists.`);
    }
    const collection = new Collection(db, name, options);
    collections.set(name, collection);
    return collection;
  }

  dropCollection(db: string, name: string): Collection | undefined {
    const collections = this.databases.get(db);
    const collection = collections?.get(name);
    if (!collections || !collection) return undefined;
    collections.delete(name);
    if (collections.size === 0) this.databases.delete(db);
    return collection;
  }

  dropDatabase(db: string): void {
    this.databases.delete(db);
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
