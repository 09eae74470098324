import { BSON, type Document } from 'bson';

import type { Collection } from '../collection.js';
import { checkCollation, parseCreateOptions, parsePreImages, parseValidation } from '../collection-options.js';
import { arraySource } from '../cursors.js';
import type { Engine } from '../engine.js';
import { CommandError, ErrorCode, refusal } from '../errors.js';
import { defaultIndexName, describeIndex, type Index, type IndexDefinition } from '../indexes.js';
import { compileFilter } from '../matcher.js';
import { asBuffer } from '../raw-bson.js';
import { formatDocument, isNumber, isPlainObject, numberOf } from '../values.js';
import { checkFields, type CommandHandler, commandOptions, type CommandRequest, optionalDocument } from './request.js';

function cursorOf(engine: Engine, request: CommandRequest, ns: string, docs: Document[]) {
  const batchSize = optionalDocument(request, 'cursor')?.batchSize;
  return engine.cursors.open(ns, arraySource(docs.map((doc) => asBuffer(BSON.serialize(doc)))), {
    batchSize: batchSize === undefined ? undefined : numberOf(batchSize),
  });
}

function existing(engine: Engine, request: CommandRequest, message: string): Collection {
  const collection = request.collection(engine);
  if (!collection) throw new CommandError(ErrorCode.NamespaceNotFound, `${message}: ${request.ns}`);
  return collection;
}

const create: CommandHandler = (engine, request) => {
  engine.catalog.createCollection(request.db, request.collectionName, parseCreateOptions(commandOptions(request)));
  return { ok: 1 };
};

const drop: CommandHandler = (engine, request) => {
  checkFields(request, ['drop']);
  const dropped = engine.catalog.dropCollection(request.db, request.collectionName);
  if (dropped) engine.cursors.killNamespace(dropped.ns, 'dropped');
  // Since MongoDB 7.0, dropping a collection that does not exist succeeds.
  return dropped ? { nIndexesWas: dropped.indexes.length, ns: dropped.ns, ok: 1 } : { ok: 1 };
};

const dropDatabase: CommandHandler = (engine, request) => {
  checkFields(request, ['dropDatabase']);
  for (const collection of engine.catalog.collections(request.db)) engine.cursors.killNamespace(collection.ns, 'dropped');
  engine.catalog.dropDatabase(request.db);
  return { ok: 1 };
};

const renameCollection: CommandHandler = (engine, request) => {
  checkFields(request, ['renameCollection', 'to', 'dropTarget', 'stayTemp']);
  if (request.db !== 'admin')
    throw new CommandError(ErrorCode.Unauthorized, 'renameCollection may only be run against the admin database.');
  const split = (ns: unknown, field: string): { db: string; name: string } => {
    const at = typeof ns === 'string' ? ns.indexOf('.') : -1;
    if (at <= 0) throw new CommandError(ErrorCode.InvalidNamespace, `Invalid ${field} namespace: ${String(ns)}`);
    return { db: (ns as string).slice(0, at), name: (ns as string).slice(at + 1) };
  };
  const from = split(request.body.renameCollection, 'source');
  const to = split(request.body.to, 'target');
  engine.catalog.renameCollection(from, to, request.body.dropTarget === true);
  engine.cursors.killNamespace(`${from.db}.${from.name}`, 'renamed');
  return { ok: 1 };
};

const listCollections: CommandHandler = (engine, request) => {
  checkFields(request, ['listCollections', 'filter', 'nameOnly', 'authorizedCollections', 'cursor']);
  const nameOnly = request.body.nameOnly === true;
  const entries = engine.catalog
    .collections(request.db)
    .filter((collection) => !collection.name.startsWith('tmp.agg_out.'))
    .map((collection) =>
      nameOnly
        ? { name: collection.name, type: 'collection' }
        : {
            name: collection.name,
            type: 'collection',
            options: collection.settings.shown,
            info: { readOnly: false, uuid: collection.uuid },
            idIndex: collection.idIndex.describe(),
          },
    );
  const filter = compileFilter(request.body.filter);
  return cursorOf(
    engine,
    request,
    `${request.db}.$cmd.listCollections`,
    entries.filter((e) => filter.test(e)),
  );
};

/** Index options the engine implements; `background` is accepted and (as in MongoDB 4.2+) has no effect. */
const INDEX_FIELDS = new Set([
  'key',
  'name',
  'unique',
  'sparse',
  'partialFilterExpression',
  'expireAfterSeconds',
  'hidden',
  'background',
  'v',
  'ns',
  'collation',
]);
/** Index options of MongoDB that the engine does not implement. */
const REFUSED_INDEX_FIELDS = new Set([
  'weights',
  'default_language',
  'language_override',
  'textIndexVersion',
  '2dsphereIndexVersion',
  'bits',
  'min',
  'max',
  'bucketSize',
  'wildcardProjection',
  'clustered',
  'prepareUnique',
  'storageEngine',
  'columnstoreProjection',
  'dropDups',
]);

function indexDefinition(spec: unknown): IndexDefinition {
  if (!isPlainObject(spec) || !isPlainObject(spec.key)) {
    throw new CommandError(ErrorCode.FailedToParse, "The 'key' field is a required property of an index specification");
  }
  for (const field of Object.keys(spec)) {
    if (REFUSED_INDEX_FIELDS.has(field)) throw refusal(ErrorCode.CannotCreateIndex, `the index option '${field}'`);
    if (!INDEX_FIELDS.has(field)) {
      throw new CommandError(
        ErrorCode.InvalidIndexSpecificationOption,
        `The field '${field}' is not valid for an index specification. Specification: ${formatDocument(spec)}`,
      );
    }
  }
  checkCollation(spec.collation);
  const key = spec.key;
  const name = typeof spec.name === 'string' && spec.name.length > 0 ? spec.name : defaultIndexName(key);
  const isId = Object.keys(key).length === 1 && '_id' in key;
  let expireAfterSeconds: number | undefined;
  if (spec.expireAfterSeconds !== undefined) {
    if (isId)
      throw new CommandError(
        ErrorCode.InvalidIndexSpecificationOption,
        `The field 'expireAfterSeconds' is not valid for an _id index specification. Specification: ${formatDocument(spec)}`,
      );
    expireAfterSeconds = ttlSeconds(spec.expireAfterSeconds);
  }
  return {
    name,
    key,
    ...(spec.unique === true ? { unique: true } : {}),
    ...(spec.sparse === true ? { sparse: true } : {}),
    ...(isPlainObject(spec.partialFilterExpression) ? { partialFilterExpression: spec.partialFilterExpression } : {}),
    ...(expireAfterSeconds !== undefined ? { expireAfterSeconds } : {}),
    ...(spec.hidden === true ? { hidden: true } : {}),
  };
}

function ttlSeconds(value: unknown): number {
  const n = isNumber(value) ? numberOf(value) : NaN;
  if (!Number.isFinite(n) || n < 0 || n > 2147483647) {
    throw new CommandError(
      ErrorCode.CannotCreateIndex,
      `TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number`,
    );
  }
  return Math.trunc(n);
}

/**
 * Whether `definition` is already there, judged as MongoDB does: the same name
 * must mean the same index, and an index cannot be asked for again under another name.
 */
function alreadyExists(indexes: Index[], definition: IndexDefinition): boolean {
  const requested = (): string => formatDocument(describeIndex(definition));
  const sameName = indexes.find((index) => index.name === definition.name);
  if (sameName) {
    const comparison = sameName.compareRequest(definition);
    if (comparison === 'different') {
      throw new CommandError(
        ErrorCode.IndexKeySpecsConflict,
        `An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation. Requested index: ${requested()}, existing index: ${formatDocument(sameName.describe())}`,
      );
    }
    if (comparison === 'equivalent') {
      throw new CommandError(
        ErrorCode.IndexOptionsConflict,
        `An equivalent index already exists with the same name but different options. Requested index: ${requested()}, existing index: ${formatDocument(sameName.describe())}`,
      );
    }
    return true;
  }
  const other = indexes.map((index) => ({ index, comparison: index.compareRequest(definition) })).find((o) => o.comparison !== 'different');
  if (other?.comparison === 'equivalent') {
    throw new CommandError(
      ErrorCode.IndexOptionsConflict,
      `An equivalent index already exists with a different name and options. Requested index: ${requested()}, existing index: ${formatDocument(other.index.describe())}`,
    );
  }
  if (other) {
    throw new CommandError(ErrorCode.IndexOptionsConflict, `Index already exists with a different name: ${other.index.name}`);
  }
  const sameKey = indexes.find((index) => index.sameKey(definition));
  if (sameKey) {
    throw refusal(
      ErrorCode.CannotCreateIndex,
      `A second index on the key pattern ${formatDocument(definition.key)} (existing index: ${sameKey.name})`,
      'MongoDB allows one that differs in unique, sparse or partialFilterExpression',
    );
  }
  return false;
}

/** Builds the requested indexes that do not exist yet, in one pass over the documents. */
const createIndexes: CommandHandler = (engine, request) => {
  checkFields(request, ['createIndexes', 'indexes', 'commitQuorum', 'ignoreUnknownIndexOptions', 'isTimeseriesNamespace']);
  const specs: unknown = request.body.indexes;
  if (!Array.isArray(specs) || specs.length === 0) {
    throw new CommandError(ErrorCode.BadValue, 'Must specify at least one index to create');
  }
  const definitions = specs.map(indexDefinition);
  const { collection, created } = engine.catalog.ensureCollection(request.db, request.collectionName);
  const before = collection.indexes.length;
  const fresh = definitions.filter(
    (definition, i) => !alreadyExists(collection.indexes, definition) && definitions.findIndex((d) => d.name === definition.name) === i,
  );
  // MongoDB counts in serverStatus the builds on a collection that existed before the command.
  collection.addIndexes(fresh, created ? undefined : engine.indexBuilds);
  const after = collection.indexes.length;
  return {
    numIndexesBefore: before,
    numIndexesAfter: after,
    // Left out, as MongoDB does, when an existing collection already has every index: there was no build.
    ...(created || fresh.length > 0 ? buildReply(engine, created) : {}),
    ...existingIndexesNote(before, after, specs.length),
    ok: 1,
  };
};

/** What MongoDB adds when the command went on to build (on a replica set, the default commit quorum). */
function buildReply(engine: Engine, created: boolean): Document {
  return { createdCollectionAutomatically: created, ...(engine.replicaSet !== undefined ? { commitQuorum: 'votingMembers' } : {}) };
}

/** MongoDB's note when some or all of the requested indexes were already there. */
function existingIndexesNote(before: number, after: number, requested: number): { note?: string } {
  if (after === before) return { note: 'all indexes already exist' };
  return after < before + requested ? { note: 'index already exists' } : {};
}

const listIndexes: CommandHandler = (engine, request) => {
  checkFields(request, ['listIndexes', 'cursor']);
  const collection = existing(engine, request, 'ns does not exist');
  return cursorOf(
    engine,
    request,
    collection.ns,
    collection.indexes.map((index) => index.describe()),
  );
};

function findIndex(collection: Collection, target: unknown): Index {
  if (typeof target === 'string') {
    const index = collection.index(target);
    if (!index) throw new CommandError(ErrorCode.IndexNotFound, `index not found with name [${target}]`);
    return index;
  }
  if (!isPlainObject(target)) throw new CommandError(ErrorCode.TypeMismatch, "BSON field 'index' has an invalid type");
  const index = collection.indexes.find((i) => i.sameKey({ name: '', key: target }));
  if (!index) throw new CommandError(ErrorCode.IndexNotFound, `can't find index with key: ${formatDocument(target)}`);
  return index;
}

const dropIndexes: CommandHandler = (engine, request) => {
  checkFields(request, [request.name, 'index']);
  const collection = existing(engine, request, 'ns not found');
  const nIndexesWas = collection.indexes.length;
  const target: unknown = request.body.index;
  if (target === '*') {
    for (const index of collection.indexes.slice(1)) collection.dropIndex(index.name);
    return { nIndexesWas, msg: 'non-_id indexes dropped for collection', ok: 1 };
  }
  for (const name of Array.isArray(target) ? target : [target]) collection.dropIndex(findIndex(collection, name).name);
  return { nIndexesWas, ok: 1 };
};

/** collMod: validation, index TTL and visibility, and pre-images; other changes are refused. */
const collMod: CommandHandler = (engine, request) => {
  const options = commandOptions(request);
  const collection = existing(engine, request, 'ns does not exist');
  const reply: Document = {};
  for (const field of Object.keys(options)) {
    if (!['validator', 'validationLevel', 'validationAction', 'index', 'changeStreamPreAndPostImages'].includes(field)) {
      if (['viewOn', 'pipeline', 'expireAfterSeconds', 'timeseries', 'cappedSize', 'cappedMax', 'clusteredIndex'].includes(field)) {
        throw refusal(ErrorCode.InvalidOptions, `collMod '${field}'`);
      }
      throw new CommandError(40415, `BSON field 'collMod.${field}' is an unknown field.`);
    }
  }
  const validation = parseValidation(options, collection.settings.validation);
  const preImages = parsePreImages(options.changeStreamPreAndPostImages);
  let change: (() => void) | undefined;
  if (options.index !== undefined) {
    const spec = options.index;
    if (!isPlainObject(spec))
      throw new CommandError(ErrorCode.TypeMismatch, "BSON field 'collMod.index' is the wrong type, expected type 'object'");
    const index = findIndex(collection, spec.name ?? spec.keyPattern);
    const ttl = spec.expireAfterSeconds === undefined ? undefined : ttlSeconds(spec.expireAfterSeconds);
    if (ttl !== undefined && index.definition.expireAfterSeconds === undefined) {
      throw new CommandError(ErrorCode.InvalidOptions, 'no expireAfterSeconds field to update');
    }
    if (spec.hidden !== undefined && index.name === '_id_') throw new CommandError(ErrorCode.BadValue, "can't hide _id index");
    for (const field of Object.keys(spec)) {
      if (!['name', 'keyPattern', 'expireAfterSeconds', 'hidden'].includes(field))
        throw refusal(ErrorCode.InvalidOptions, `collMod index option '${field}'`);
    }
    change = () => {
      if (ttl !== undefined) {
        reply.expireAfterSeconds_old = index.definition.expireAfterSeconds;
        reply.expireAfterSeconds_new = ttl;
        index.definition.expireAfterSeconds = ttl;
      }
      if (spec.hidden !== undefined) {
        reply.hidden_old = index.definition.hidden === true;
        reply.hidden_new = spec.hidden === true;
        index.definition.hidden = spec.hidden === true;
      }
    };
  }
  collection.settings.validation = validation;
  if (preImages !== undefined) collection.settings.preImages = preImages;
  for (const field of ['validator', 'validationLevel', 'validationAction', 'changeStreamPreAndPostImages']) {
    if (options[field] !== undefined) collection.settings.shown[field] = options[field];
  }
  change?.();
  collection.saveDefinition();
  return { ...reply, ok: 1 };
};

export const ddlCommands: Record<string, CommandHandler> = {
  create,
  drop,
  dropDatabase,
  renameCollection,
  listCollections,
  createIndexes,
  listIndexes,
  dropIndexes,
  deleteIndexes: dropIndexes,
  collMod,
};
