import { BSON, type Document } from 'bson';
import type { Collection } from '../collection.js';
import { arraySource } from '../cursors.js';
import type { Engine } from '../engine.js';
import { CommandError, ErrorCode } from '../errors.js';
import { defaultIndexName, type Index, type IndexDefinition } from '../indexes.js';
import { compileFilter } from '../matching.js';
import { asBuffer } from '../raw-bson.js';
import { isPlainObject } from '../values.js';
import { optionalDocument, type CommandHandler, type CommandRequest } from './request.js';

/** Fields every command may carry that are not collection options. */
const GENERIC_FIELDS = new Set([
  '$db', 'lsid', '$clusterTime', '$readPreference', 'writeConcern', 'readConcern', 'comment', 'maxTimeMS',
  'apiVersion', 'apiStrict', 'apiDeprecationErrors',
]);

function cursorOf(engine: Engine, request: CommandRequest, ns: string, docs: Document[]) {
  const batchSize = optionalDocument(request, 'cursor')?.batchSize;
  return engine.cursors.open(ns, arraySource(docs.map((doc) => asBuffer(BSON.serialize(doc)))), {
    batchSize: batchSize === undefined ? undefined : Number(batchSize),
  });
}

function existing(engine: Engine, request: CommandRequest, message: string): Collection {
  const collection = request.collection(engine);
  if (!collection) throw new CommandError(ErrorCode.NamespaceNotFound, `${message}: ${request.ns}`);
  return collection;
}

const create: CommandHandler = (engine, request) => {
  const name = request.collectionName;
  if (request.body.viewOn !== undefined) throw new CommandError(ErrorCode.BadValue, 'views are not supported by the embedded engine');
  const options = Object.fromEntries(
    Object.entries(request.typedBody()).filter(([key]) => key !== 'create' && !GENERIC_FIELDS.has(key)),
  );
  engine.catalog.createCollection(request.db, name, options);
  return { ok: 1 };
};

const drop: CommandHandler = (engine, request) => {
  const dropped = engine.catalog.dropCollection(request.db, request.collectionName);
  // Since MongoDB 7.0, dropping a collection that does not exist succeeds.
  return dropped ? { nIndexesWas: dropped.indexes.length, ns: dropped.ns, ok: 1 } : { ok: 1 };
};

const listCollections: CommandHandler = (engine, request) => {
  const nameOnly = request.body.nameOnly === true;
  const entries = engine.catalog.collections(request.db).map((collection) =>
    nameOnly
      ? { name: collection.name, type: 'collection' }
      : {
          name: collection.name,
          type: 'collection',
          options: collection.options,
          info: { readOnly: false, uuid: collection.uuid },
          idIndex: collection.idIndex.describe(),
        },
  );
  const filter = compileFilter(request.body.filter);
  return cursorOf(engine, request, `${request.db}.$cmd.listCollections`, entries.filter((e) => filter.test(e)));
};

function indexDefinition(spec: unknown): IndexDefinition {
  if (!isPlainObject(spec) || !isPlainObject(spec.key)) {
    throw new CommandError(ErrorCode.FailedToParse, "The 'key' field is a required property of an index specification");
  }
  const key = spec.key;
  const name = typeof spec.name === 'string' && spec.name.length > 0 ? spec.name : defaultIndexName(key);
  return {
    name,
    key,
    ...(spec.unique === true ? { unique: true } : {}),
    ...(spec.sparse === true ? { sparse: true } : {}),
    ...(isPlainObject(spec.partialFilterExpression) ? { partialFilterExpression: spec.partialFilterExpression } : {}),
    ...(typeof spec.expireAfterSeconds === 'number' ? { expireAfterSeconds: spec.expireAfterSeconds } : {}),
  };
}

/** Whether `definition` is already there; refuses a clash of names, keys or options like MongoDB. */
function alreadyExists(indexes: Index[], definition: IndexDefinition): boolean {
  const sameName = indexes.find((index) => index.name === definition.name);
  const sameKey = indexes.find((index) => index.sameKey(definition));
  if (sameName && !sameName.sameKey(definition)) {
    throw new CommandError(
      ErrorCode.IndexKeySpecsConflict,
      `An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation. Requested index: ${JSON.stringify(definition)}, existing index: ${JSON.stringify(sameName.describe())}`,
    );
  }
  if (sameKey && !sameKey.sameOptions(definition)) {
    throw new CommandError(
      ErrorCode.IndexOptionsConflict,
      `An equivalent index already exists with the same name but different options. Requested index: ${JSON.stringify(definition)}, existing index: ${JSON.stringify(sameKey.describe())}`,
    );
  }
  if (sameKey && sameKey.name !== definition.name) {
    throw new CommandError(
      ErrorCode.IndexOptionsConflict,
      `Index already exists with a different name: ${sameKey.name}`,
    );
  }
  return sameKey !== undefined;
}

const createIndexes: CommandHandler = (engine, request) => {
  const specs: unknown = request.body.indexes;
  if (!Array.isArray(specs) || specs.length === 0) {
    throw new CommandError(ErrorCode.BadValue, 'Must specify at least one index to create');
  }
  // Keys keep their BSON number types (listIndexes shows them as given); filters are matched promoted.
  const typedSpecs = request.typedBody().indexes as unknown[];
  const definitions = specs.map((spec, i) => ({ ...indexDefinition(spec), key: indexDefinition(typedSpecs[i]).key }));
  const { collection, created } = engine.catalog.ensureCollection(request.db, request.collectionName);
  const before = collection.indexes.length;
  const fresh = definitions.filter(
    (definition, i) => !alreadyExists(collection.indexes, definition) && definitions.findIndex((d) => d.name === definition.name) === i,
  );
  collection.addIndexes(fresh);
  return {
    numIndexesBefore: before,
    numIndexesAfter: collection.indexes.length,
    createdCollectionAutomatically: created,
    ...(fresh.length === 0 ? { note: 'all indexes already exist' } : {}),
    ok: 1,
  };
};

const listIndexes: CommandHandler = (engine, request) => {
  const collection = existing(engine, request, 'ns does not exist');
  return cursorOf(engine, request, collection.ns, collection.indexes.map((index) => index.describe()));
};

const dropIndexes: CommandHandler = (engine, request) => {
  const collection = existing(engine, request, 'ns not found');
  const nIndexesWas = collection.indexes.length;
  const target: unknown = request.body.index;
  if (target === '*') {
    for (const index of collection.indexes.slice(1)) collection.dropIndex(index.name);
    return { nIndexesWas, msg: 'non-_id indexes dropped for collection', ok: 1 };
  }
  const names = Array.isArray(target) ? target : [target];
  for (const name of names) {
    if (typeof name === 'string') {
      collection.dropIndex(name);
      continue;
    }
    if (!isPlainObject(name)) throw new CommandError(ErrorCode.TypeMismatch, "BSON field 'dropIndexes.index' has an invalid type");
    const index = collection.indexes.find((i) => i.sameKey({ name: '', key: name }));
    if (!index) throw new CommandError(ErrorCode.IndexNotFound, `can't find index with key: ${JSON.stringify(name)}`);
    collection.dropIndex(index.name);
  }
  return { nIndexesWas, ok: 1 };
};

export const ddlCommands: Record<string, CommandHandler> = {
  create,
  drop,
  listCollections,
  createIndexes,
  listIndexes,
  dropIndexes,
  deleteIndexes: dropIndexes,
};
