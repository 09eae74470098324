import { BSON, type Document } from 'bson';
import type { Collection } from '../collection.js';
import type { Engine } from '../engine.js';
import { CommandError, ErrorCode } from '../errors.js';
import { bsonTypeOf, TYPED } from '../values.js';

/** One decoded command, as a handler sees it. */
export class CommandRequest {
  private typed: Document | undefined;

  constructor(
    readonly name: string,
    readonly db: string,
    /** The body, promoted (what mingo and the planner use). */
    readonly body: Document,
    private readonly rawBody: Buffer,
    /** OP_MSG document sequences by identifier, raw. */
    readonly sequences: Map<string, Buffer[]>,
    readonly connectionId: number,
  ) {}

  /** The body decoded keeping int32, int64 and double apart: for values that get stored. */
  typedBody(): Document {
    this.typed ??= BSON.deserialize(this.rawBody, TYPED);
    return this.typed;
  }

  /** The same request seen as another command (e.g. the command inside `explain`). */
  as(name: string, body: Document): CommandRequest {
    return new CommandRequest(name, this.db, body, this.rawBody, new Map(), this.connectionId);
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

  /** A document array given in the body or as a document sequence, in both views. */
  statements(field: string): { promoted: Document[]; typed: Document[] } {
    const sequence = this.sequences.get(field);
    if (sequence) {
      return {
        promoted: sequence.map((raw) => BSON.deserialize(raw)),
        typed: sequence.map((raw) => BSON.deserialize(raw, TYPED)),
      };
    }
    const promoted: unknown = this.body[field];
    if (!Array.isArray(promoted)) {
      throw new CommandError(ErrorCode.FailedToParse, `BSON field '${this.name}.${field}' is missing but a required field`);
    }
    return { promoted: promoted as Document[], typed: this.typedBody()[field] as Document[] };
  }
}

export type CommandReply = Document | Buffer;
export type CommandHandler = (engine: Engine, request: CommandRequest) => CommandReply;

export function optionalNumber(request: CommandRequest, field: string, fallback: number): number {
  const value: unknown = request.body[field];
  if (value === undefined || value === null) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n)) {
    throw new CommandError(ErrorCode.TypeMismatch, `BSON field '${request.name}.${field}' is the wrong type '${typeof value}', expected a number`);
  }
  return Math.trunc(n);
}

export function optionalDocument(request: CommandRequest, field: string): Document | undefined {
  const value: unknown = request.body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new CommandError(ErrorCode.TypeMismatch, `BSON field '${request.name}.${field}' is the wrong type '${Array.isArray(value) ? 'array' : typeof value}', expected type 'object'`);
  }
  return value as Document;
}

/** A cursor id as sent (int64, which may arrive promoted to a JS number). */
export function toCursorId(value: unknown): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number' && Number.isInteger(value)) return BigInt(value);
  if (bsonTypeOf(value) === 'Long') {
    return BigInt(String(value));
  }
  throw new CommandError(ErrorCode.TypeMismatch, 'cursor id must be a 64-bit integer');
}
