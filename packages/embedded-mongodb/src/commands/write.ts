import { BSON, ObjectId, type Document } from 'bson';
import type { Engine } from '../engine.js';
import { CommandError, ErrorCode, toCommandError } from '../errors.js';
import { findMatches } from '../executor.js';
import { parseSort } from '../planner.js';
import { compileProjection } from '../projection.js';
import { asBuffer, documentFromElements, MAX_BSON_OBJECT_SIZE, rawElements } from '../raw-bson.js';
import { updateDocument, updateKind, upsertDocument, type UpdatedDocument, type UpdateStatement } from '../update.js';
import { isPlainObject, promoted, typed } from '../values.js';
import { optionalDocument, type CommandHandler, type CommandRequest } from './request.js';

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

/** The stored form of an inserted document: its own bytes, `_id` first (generated when missing). */
function prepareInsert(raw: Buffer): Buffer {
  if (raw.length > MAX_BSON_OBJECT_SIZE) {
    throw new CommandError(ErrorCode.BSONObjectTooLarge, `object to insert too large. size in bytes: ${raw.length}, max size: ${MAX_BSON_OBJECT_SIZE}`);
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
    throw new CommandError(ErrorCode.BadValue, `The '_id' value cannot be of type ${name}`);
  }
  return idAt === 0 ? raw : documentFromElements(raw, [elements[idAt]!, ...elements.filter((_, i) => i !== idAt)]);
}

const insert: CommandHandler = (engine, request) => {
  const documents = request.sequences.get('documents') ?? request.body.documents;
  if (!Array.isArray(documents)) {
    throw new CommandError(ErrorCode.FailedToParse, "BSON field 'insert.documents' is missing but a required field");
  }
  const collection = engine.catalog.ensureCollection(request.db, request.collectionName).collection;
  let n = 0;
  const writeErrors = runStatements(request, documents as Buffer[], (raw) => {
    collection.insert(prepareInsert(raw));
    n++;
  });
  return { n, ...(writeErrors.length > 0 ? { writeErrors } : {}), ok: 1 };
};

interface UpdateOptions {
  multi: boolean;
  upsert: boolean;
  sort?: Document;
  hint?: unknown;
}

interface UpdateOutcome {
  matched: number;
  modified: number;
  upserted?: UpdatedDocument;
  /** The single matched document before and after (multi: false). */
  before?: Buffer;
  after?: Buffer;
}

function executeUpdate(engine: Engine, request: CommandRequest, statement: UpdateStatement, options: UpdateOptions): UpdateOutcome {
  if (options.multi && updateKind(statement.update) === 'replacement') {
    throw new CommandError(ErrorCode.FailedToParse, 'multi update is not supported for replacement-style update');
  }
  const collection = request.collection(engine);
  const matches = findMatches(collection, {
    filter: statement.filter,
    sort: parseSort(options.sort),
    limit: options.multi ? 0 : 1,
    hint: options.hint,
  });
  if (matches.length === 0) {
    if (!options.upsert) return { matched: 0, modified: 0 };
    const created = upsertDocument(statement);
    engine.catalog.ensureCollection(request.db, request.collectionName).collection.insert(created.raw, created.doc);
    return { matched: 0, modified: 0, upserted: created, after: created.raw };
  }
  let modified = 0;
  let after: Buffer | undefined;
  for (const match of matches) {
    const next = updateDocument(statement, match.raw, match.doc);
    after = next?.raw ?? match.raw;
    if (!next) continue;
    collection!.replace(match.rid, next.raw, next.doc, promoted(match.raw));
    modified++;
  }
  return { matched: matches.length, modified, before: matches[0]!.raw, after };
}

function statementFrom(promotedSpec: Document, typedSpec: Document, filterField: string, updateField: string): UpdateStatement {
  const filter: unknown = promotedSpec[filterField] ?? {};
  if (!isPlainObject(filter)) throw new CommandError(ErrorCode.TypeMismatch, `'${filterField}' must be an object`);
  const update: unknown = promotedSpec[updateField];
  if (update === undefined) throw new CommandError(ErrorCode.FailedToParse, `BSON field '${updateField}' is missing but a required field`);
  return {
    filter,
    typedFilter: (typedSpec[filterField] as Document | undefined) ?? {},
    update: update as Document,
    typedUpdate: typedSpec[updateField] as Document,
    arrayFilters: Array.isArray(promotedSpec.arrayFilters) ? (promotedSpec.arrayFilters as Document[]) : undefined,
  };
}

const update: CommandHandler = (engine, request) => {
  const { promoted: statements, typed: typedStatements } = request.statements('updates');
  let n = 0;
  let nModified = 0;
  const upserted: Document[] = [];
  const writeErrors = runStatements(request, statements, (spec, index) => {
    const outcome = executeUpdate(engine, request, statementFrom(spec, typedStatements[index]!, 'q', 'u'), {
      multi: spec.multi === true,
      upsert: spec.upsert === true,
      hint: spec.hint,
    });
    if (outcome.upserted) {
      n++;
      upserted.push({ index, _id: typed(outcome.upserted.raw)._id });
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
  const { promoted: statements } = request.statements('deletes');
  const collection = request.collection(engine);
  let n = 0;
  const writeErrors = runStatements(request, statements, (spec) => {
    const limit = Number(spec.limit ?? 0);
    if (limit !== 0 && limit !== 1) throw new CommandError(ErrorCode.FailedToParse, 'The limit field in delete objects must be 0 or 1. Got ' + String(limit));
    const filter: unknown = spec.q ?? {};
    if (!isPlainObject(filter)) throw new CommandError(ErrorCode.TypeMismatch, "'q' must be an object");
    for (const match of findMatches(collection, { filter, sort: [], limit, hint: spec.hint })) {
      collection!.remove(match.rid, match.doc);
      n++;
    }
  });
  return { n, ...(writeErrors.length > 0 ? { writeErrors } : {}), ok: 1 };
};

const findAndModify: CommandHandler = (engine, request) => {
  const { body } = request;
  const remove = body.remove === true;
  const returnNew = body.new === true;
  const upsert = body.upsert === true;
  if (remove && body.update !== undefined) throw new CommandError(ErrorCode.FailedToParse, 'Cannot specify both an update and remove=true');
  if (!remove && body.update === undefined) throw new CommandError(ErrorCode.FailedToParse, 'Either an update or remove=true must be specified');
  if (remove && returnNew) throw new CommandError(ErrorCode.FailedToParse, "Cannot specify both new=true and remove=true; 'remove' always returns the deleted document");
  if (remove && upsert) throw new CommandError(ErrorCode.FailedToParse, 'Cannot specify both upsert=true and remove=true');
  const query = optionalDocument(request, 'query') ?? {};
  const projector = compileProjection(body.fields, query);
  const value = (raw: Buffer | undefined): Document | null => (raw ? typed(projector ? projector(raw) : raw) : null);

  if (remove) {
    const collection = request.collection(engine);
    const [match] = findMatches(collection, { filter: query, sort: parseSort(body.sort), limit: 1, hint: body.hint });
    if (match) collection!.remove(match.rid, match.doc);
    return { lastErrorObject: { n: match ? 1 : 0 }, value: value(match?.raw), ok: 1 };
  }
  const outcome = executeUpdate(engine, request, statementFrom(body, request.typedBody(), 'query', 'update'), {
    multi: false,
    upsert,
    sort: optionalDocument(request, 'sort'),
    hint: body.hint,
  });
  const lastErrorObject = {
    n: outcome.matched + (outcome.upserted ? 1 : 0),
    updatedExisting: outcome.matched > 0,
    ...(outcome.upserted ? { upserted: typed(outcome.upserted.raw)._id } : {}),
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
