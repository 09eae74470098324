import { BSON, type Document, ObjectId } from 'bson';

import type { Collection } from '../collection.js';
import { checkCollation } from '../collection-options.js';
import type { Engine } from '../engine.js';
import { CommandError, ErrorCode, toCommandError } from '../errors.js';
import { findMatches } from '../executor.js';
import { evaluateLet } from '../matcher.js';
import { parseSort } from '../planner.js';
import { compileProjection } from '../projection.js';
import { asBuffer, documentFromElements, MAX_BSON_OBJECT_SIZE, rawElements } from '../raw-bson.js';
import { checkStorage, type UpdatedDocument, updateDocument, upsertDocument } from '../update/apply.js';
import { type CompiledUpdate, compileUpdate, updateKind } from '../update/parse.js';
import { isPlainObject, typed } from '../values.js';
import { checkFields, type CommandHandler, type CommandRequest, optionalDocument } from './request.js';

/** A `writeErrors` entry: MongoDB sends index, code and errmsg (plus keyPattern/keyValue for E11000). */
function writeError(index: number, error: unknown): Document {
  const { code, errmsg, codeName: _codeName, ...extra } = toCommandError(error).toDocument();
  return { index, code, errmsg, ...extra };
}

/** Runs statements in order; ordered writes stop at the first failure. */
function runStatements<T>(request: CommandRequest, statements: T[], run: (statement: T, index: number) => void): Document[] {
  const ordered = request.body.ordered !== false;
  const errors: Document[] = [];
  for (let i = 0; i < statements.length; i++) {
    try {
      run(statements[i]!, i);
    } catch (error) {
      errors.push(writeError(i, error));
      if (ordered) break;
    }
  }
  return errors;
}

const BSON_ARRAY = 0x04;
const BSON_UNDEFINED = 0x06;
const BSON_REGEX = 0x0b;
const BSON_DOCUMENT = 0x03;

/** The stored form of an inserted document: its own bytes, `_id` first (generated when missing). */
function prepareInsert(raw: Buffer): Buffer {
  if (raw.length > MAX_BSON_OBJECT_SIZE) {
    throw new CommandError(
      ErrorCode.BSONObjectTooLarge,
      `object to insert too large. size in bytes: ${raw.length}, max size: ${MAX_BSON_OBJECT_SIZE}`,
    );
  }
  const elements = rawElements(raw);
  const idAt = elements.findIndex((e) => e.name === '_id');
  if (idAt < 0) {
    const withId = asBuffer(BSON.serialize({ _id: new ObjectId() }));
    const joined = Buffer.concat([withId.subarray(0, withId.length - 1), raw.subarray(4)]);
    joined.writeInt32LE(joined.length, 0);
    return joined;
  }
  const idType = raw[elements[idAt]!.start];
  if (idType === BSON_ARRAY || idType === BSON_UNDEFINED || idType === BSON_REGEX) {
    const name = idType === BSON_ARRAY ? 'array' : idType === BSON_REGEX ? 'regex' : 'undefined';
    throw new CommandError(ErrorCode.InvalidIdField, `The '_id' value cannot be of type ${name}`);
  }
  if (idType === BSON_DOCUMENT) checkStorage({ _id: typed(raw)._id }, true);
  return idAt === 0 ? raw : documentFromElements(raw, [elements[idAt]!, ...elements.filter((_, i) => i !== idAt)]);
}

/** Whether this write skips the collection's validator (bypassDocumentValidation). */
function validating(request: CommandRequest, collection: Collection): boolean {
  return request.body.bypassDocumentValidation !== true && collection.settings.validation !== undefined;
}

const insert: CommandHandler = (engine, request) => {
  checkFields(request, ['insert', 'documents', 'ordered', 'bypassDocumentValidation']);
  const documents = request.sequences.get('documents') ?? request.body.documents;
  if (!Array.isArray(documents)) {
    throw new CommandError(ErrorCode.FailedToParse, "BSON field 'insert.documents' is missing but a required field");
  }
  const collection = engine.catalog.ensureCollection(request.db, request.collectionName).collection;
  const validate = validating(request, collection);
  let n = 0;
  const writeErrors = runStatements(request, documents as Buffer[], (raw) => {
    const stored = prepareInsert(raw);
    if (validate) collection.validate(typed(stored));
    collection.insert(stored);
    n++;
  });
  return { n, ...(writeErrors.length > 0 ? { writeErrors } : {}), ok: 1 };
};

interface UpdateOptions {
  multi: boolean;
  upsert: boolean;
  sort?: Document;
  hint?: unknown;
  variables?: Document;
}

interface UpdateOutcome {
  matched: number;
  modified: number;
  upserted?: UpdatedDocument;
  /** The single matched document before and after (multi: false). */
  before?: Buffer;
  after?: Buffer;
}

function executeUpdate(
  engine: Engine,
  request: CommandRequest,
  filter: Document,
  update: CompiledUpdate,
  options: UpdateOptions,
): UpdateOutcome {
  if (options.multi && update.kind === 'replacement') {
    throw new CommandError(ErrorCode.FailedToParse, 'multi update is not supported for replacement-style update');
  }
  const collection = request.collection(engine);
  const matches = findMatches(collection, {
    filter,
    sort: parseSort(options.sort),
    limit: options.multi ? 0 : 1,
    hint: options.hint,
    variables: options.variables,
  });
  const now = new Date(engine.clock.now());
  if (matches.length === 0) {
    if (!options.upsert) return { matched: 0, modified: 0 };
    const created = upsertDocument(update, filter, now);
    const target = engine.catalog.ensureCollection(request.db, request.collectionName).collection;
    if (validating(request, target)) target.validate(created.doc);
    target.insert(created.raw, created.doc);
    return { matched: 0, modified: 0, upserted: created, after: created.raw };
  }
  let modified = 0;
  let after: Buffer | undefined;
  const validate = validating(request, collection!);
  for (const match of matches) {
    const next = updateDocument(update, match.raw, match.doc, now);
    after = next?.raw ?? match.raw;
    if (!next) continue;
    const previous = typed(match.raw);
    if (validate) collection!.validate(next.doc, previous);
    collection!.replace(match.rid, next.raw, next.doc, previous, {
      operation: update.kind === 'replacement' ? 'replace' : 'update',
      description: next.description,
    });
    modified++;
  }
  return { matched: matches.length, modified, before: matches[0]!.raw, after };
}

/** A statement's filter, update and array filters, checked and compiled once. */
function compileStatement(
  spec: Document,
  filterField: string,
  updateField: string,
  variables: Document | undefined,
): { filter: Document; update: CompiledUpdate } {
  const filter: unknown = spec[filterField] ?? {};
  if (!isPlainObject(filter)) throw new CommandError(ErrorCode.TypeMismatch, `'${filterField}' must be an object`);
  const update: unknown = spec[updateField];
  if (update === undefined) throw new CommandError(ErrorCode.FailedToParse, `BSON field '${updateField}' is missing but a required field`);
  updateKind(update);
  if (spec.arrayFilters !== undefined && !Array.isArray(spec.arrayFilters)) {
    throw new CommandError(ErrorCode.TypeMismatch, "BSON field 'arrayFilters' is the wrong type, expected type 'array'");
  }
  if (spec.arrayFilters !== undefined && updateKind(update) !== 'operators') {
    throw new CommandError(ErrorCode.FailedToParse, 'arrayFilters may not be specified for pipeline-style updates');
  }
  checkCollation(spec.collation);
  return {
    filter,
    update: compileUpdate({ filter, update: update as Document, arrayFilters: spec.arrayFilters as Document[] | undefined, variables }),
  };
}

const UPDATE_STATEMENT_FIELDS = ['q', 'u', 'c', 'multi', 'upsert', 'arrayFilters', 'hint', 'collation', 'upsertSupplied'];

const update: CommandHandler = (engine, request) => {
  checkFields(request, ['update', 'updates', 'ordered', 'bypassDocumentValidation', 'let']);
  const variables = evaluateLet(request.body.let);
  const statements = request.statements('updates');
  // MongoDB 7.0 has no `sort` in update statements (8.0 added it).
  for (const spec of statements) checkFields(request, UPDATE_STATEMENT_FIELDS, 'update.updates', spec);
  let n = 0;
  let nModified = 0;
  const upserted: Document[] = [];
  const writeErrors = runStatements(request, statements, (spec, index) => {
    const constants = isPlainObject(spec.c) ? evaluateLet(spec.c) : undefined;
    const statementVariables = constants || variables ? { ...variables, ...constants } : undefined;
    const { filter, update: compiled } = compileStatement(spec, 'q', 'u', statementVariables);
    const outcome = executeUpdate(engine, request, filter, compiled, {
      multi: spec.multi === true,
      upsert: spec.upsert === true,
      hint: spec.hint,
      variables: statementVariables,
    });
    if (outcome.upserted) {
      n++;
      upserted.push({ index, _id: outcome.upserted.doc._id });
    }
    n += outcome.matched;
    nModified += outcome.modified;
  });
  return {
    n,
    nModified,
    ...(upserted.length > 0 ? { upserted } : {}),
    ...(writeErrors.length > 0 ? { writeErrors } : {}),
    ok: 1,
  };
};

const del: CommandHandler = (engine, request) => {
  checkFields(request, ['delete', 'deletes', 'ordered', 'let']);
  const variables = evaluateLet(request.body.let);
  const statements = request.statements('deletes');
  for (const spec of statements) checkFields(request, ['q', 'limit', 'hint', 'collation'], 'delete.deletes', spec);
  const collection = request.collection(engine);
  let n = 0;
  const writeErrors = runStatements(request, statements, (spec) => {
    checkCollation(spec.collation);
    const limit = Number(spec.limit ?? 0);
    if (limit !== 0 && limit !== 1)
      throw new CommandError(ErrorCode.FailedToParse, 'The limit field in delete objects must be 0 or 1. Got ' + String(limit));
    const filter: unknown = spec.q ?? {};
    if (!isPlainObject(filter)) throw new CommandError(ErrorCode.TypeMismatch, "'q' must be an object");
    for (const match of findMatches(collection, { filter, sort: [], limit, hint: spec.hint, variables })) {
      collection!.remove(match.rid, match.doc);
      n++;
    }
  });
  return { n, ...(writeErrors.length > 0 ? { writeErrors } : {}), ok: 1 };
};

const findAndModify: CommandHandler = (engine, request) => {
  checkFields(request, [
    request.name,
    'query',
    'sort',
    'remove',
    'update',
    'new',
    'fields',
    'upsert',
    'bypassDocumentValidation',
    'collation',
    'arrayFilters',
    'hint',
    'let',
  ]);
  const { body } = request;
  const remove = body.remove === true;
  const returnNew = body.new === true;
  const upsert = body.upsert === true;
  if (remove && body.update !== undefined) throw new CommandError(ErrorCode.FailedToParse, 'Cannot specify both an update and remove=true');
  if (!remove && body.update === undefined)
    throw new CommandError(ErrorCode.FailedToParse, 'Either an update or remove=true must be specified');
  if (remove && returnNew)
    throw new CommandError(
      ErrorCode.FailedToParse,
      "Cannot specify both new=true and remove=true; 'remove' always returns the deleted document",
    );
  if (remove && upsert) throw new CommandError(ErrorCode.FailedToParse, 'Cannot specify both upsert=true and remove=true');
  checkCollation(body.collation);
  const variables = evaluateLet(body.let);
  const query = optionalDocument(request, 'query') ?? {};
  const projector = compileProjection(body.fields, query, { variables });
  const value = (raw: Buffer | undefined): Document | null => (raw ? typed(projector ? projector(raw) : raw) : null);

  if (remove) {
    const collection = request.collection(engine);
    const [match] = findMatches(collection, { filter: query, sort: parseSort(body.sort), limit: 1, hint: body.hint, variables });
    if (match) collection!.remove(match.rid, match.doc);
    return { lastErrorObject: { n: match ? 1 : 0 }, value: value(match?.raw), ok: 1 };
  }
  const { filter, update: compiled } = compileStatement(body, 'query', 'update', variables);
  const outcome = executeUpdate(engine, request, filter, compiled, {
    multi: false,
    upsert,
    sort: optionalDocument(request, 'sort'),
    hint: body.hint,
    variables,
  });
  const lastErrorObject = {
    n: outcome.matched + (outcome.upserted ? 1 : 0),
    updatedExisting: outcome.matched > 0,
    ...(outcome.upserted ? { upserted: outcome.upserted.doc._id } : {}),
  };
  return { lastErrorObject, value: value(returnNew ? outcome.after : outcome.before), ok: 1 };
};

export const writeCommands: Record<string, CommandHandler> = {
  insert,
  update,
  delete: del,
  findAndModify,
  findandmodify: findAndModify,
};
