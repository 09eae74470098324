import { BSON, type Document } from 'bson';

import type { Collection } from '../collection.js';
import type { Engine } from '../engine.js';
import { CommandError, ErrorCode } from '../errors.js';
import { bsonTypeOf, isNumber, isPlainObject, numberOf, TYPED, typeName } from '../values.js';

/** One decoded command, as a handler sees it. */
export class CommandRequest {
  /** Labels a fail point gave, to answer in place of those the server would add. */
  errorLabelsOverride: string[] | undefined;
  /** Set by getMore once the cursor it continues is known to be a change stream's. */
  continuesChangeStream = false;

  constructor(
    readonly name: string,
    readonly db: string,
    /** The body in the typed view (int32, int64 and double kept apart). */
    readonly body: Document,
    /** OP_MSG document sequences by identifier, raw. */
    readonly sequences: Map<string, Buffer[]>,
    readonly connectionId: number,
  ) {}

  /** The same request seen as another command (e.g. the command inside `explain`). */
  as(name: string, body: Document): CommandRequest {
    return new CommandRequest(name, this.db, body, new Map(), this.connectionId);
  }

  /** The collection a command names in its first field, e.g. `{find: "users"}`. */
  get collectionName(): string {
    const value: unknown = this.body[this.name];
    if (typeof value !== 'string' || value.length === 0) {
      throw new CommandError(ErrorCode.InvalidNamespace, `collection name has invalid type ${typeof value}`);
    }
    return value;
  }

  get ns(): string {
    return `${this.db}.${this.collectionName}`;
  }

  collection(engine: Engine): Collection | undefined {
    return engine.catalog.collection(this.db, this.collectionName);
  }

  /** A document array given in the body or as a document sequence. */
  statements(field: string): Document[] {
    const sequence = this.sequences.get(field);
    if (sequence) return sequence.map((raw) => BSON.deserialize(raw, TYPED));
    const statements: unknown = this.body[field];
    if (!Array.isArray(statements)) {
      throw new CommandError(ErrorCode.FailedToParse, `BSON field '${this.name}.${field}' is missing but a required field`);
    }
    return statements as Document[];
  }
}

export type CommandReply = Document | Buffer;
export type CommandHandler = (engine: Engine, request: CommandRequest) => CommandReply | Promise<CommandReply>;

export function optionalNumber(request: CommandRequest, field: string, fallback: number): number {
  const value: unknown = request.body[field];
  if (value === undefined || value === null) return fallback;
  const n = isNumber(value) ? numberOf(value) : NaN;
  if (!Number.isFinite(n)) {
    throw new CommandError(
      ErrorCode.TypeMismatch,
      `BSON field '${request.name}.${field}' is the wrong type '${typeName(value)}', expected a number`,
    );
  }
  return Math.trunc(n);
}

export function optionalDocument(request: CommandRequest, field: string): Document | undefined {
  const value: unknown = request.body[field];
  if (value === undefined || value === null) return undefined;
  if (!isPlainObject(value)) {
    throw new CommandError(
      ErrorCode.TypeMismatch,
      `BSON field '${request.name}.${field}' is the wrong type '${typeName(value)}', expected type 'object'`,
    );
  }
  return value;
}

/** A cursor id or transaction number as sent (int64, or a smaller number type when a client sends one). */
export function toCursorId(value: unknown): bigint {
  if (typeof value === 'bigint') return value;
  if (bsonTypeOf(value) === 'Long') return BigInt(String(value));
  if (isNumber(value) && Number.isInteger(numberOf(value))) return BigInt(numberOf(value));
  throw new CommandError(ErrorCode.TypeMismatch, 'cursor id must be a 64-bit integer');
}

/** Fields any command may carry (sessions, read/write concerns, API versioning, driver metadata). */
const GENERIC_FIELDS = new Set([
  '$db',
  'lsid',
  'txnNumber',
  'autocommit',
  'startTransaction',
  '$clusterTime',
  '$readPreference',
  'readConcern',
  'writeConcern',
  'comment',
  'maxTimeMS',
  'apiVersion',
  'apiStrict',
  'apiDeprecationErrors',
  'stmtId',
  'stmtIds',
]);

/**
 * Refuses a field the command does not have, as MongoDB's command parser
 * does (rather than ignoring it): `fields` are the command's own.
 */
export function checkFields(
  request: CommandRequest,
  fields: readonly string[],
  path = request.name,
  object: Document = request.body,
): void {
  const top = object === request.body;
  for (const name of Object.keys(object)) {
    if (fields.includes(name) || (top && GENERIC_FIELDS.has(name))) continue;
    throw new CommandError(40415, `BSON field '${path}.${name}' is an unknown field.`);
  }
}

/** A command's own fields besides its name (e.g. the options of `create`). */
export function commandOptions(request: CommandRequest): Document {
  return Object.fromEntries(Object.entries(request.body).filter(([name]) => name !== request.name && !GENERIC_FIELDS.has(name)));
}
