import { Binary, BSON, type Document, Long, type Timestamp } from 'bson';

import type { Engine } from '../engine.js';
import { errorLabels, type LabelContext } from '../error-labels.js';
import { CommandError, ErrorCode, refusal, toCommandError } from '../errors.js';
import { asBuffer } from '../raw-bson.js';
import { isNumber, isPlainObject, numberOf, TYPED } from '../values.js';
import {
  encodeOpMsg,
  encodeOpReply,
  MORE_TO_COME,
  OP_QUERY,
  type OpMsgRequest,
  type OpQueryRequest,
  parseMessage,
  ProtocolError,
  type ReplyBody,
} from '../wire.js';
import { adminCommands } from './admin.js';
import { checkApiParameters } from './api-version.js';
import { ddlCommands } from './ddl.js';
import {
  CloseConnection,
  failBeforeRunning,
  type FailCommandTarget,
  failCommandTarget,
  writeConcernErrorAfterRunning,
} from './fail-command.js';
import { readCommands } from './read.js';
import { type CommandHandler, type CommandReply, CommandRequest, toCursorId } from './request.js';
import { testCommands } from './testing.js';
import { writeCommands } from './write.js';

const COMMANDS = new Map<string, CommandHandler>(Object.entries({ ...adminCommands, ...readCommands, ...writeCommands, ...ddlCommands }));
const TEST_COMMANDS = new Map<string, CommandHandler>(Object.entries(testCommands));
/** Other names of commands, by which a client may call them or a fail point name them. */
const ALIASES = new Map([
  ['isMaster', 'hello'],
  ['ismaster', 'hello'],
  ['buildinfo', 'buildInfo'],
  ['findandmodify', 'findAndModify'],
  ['deleteIndexes', 'dropIndexes'],
]);
const canonical = (name: string): string => ALIASES.get(name) ?? name;
/** Commands that take a write concern (aggregate only when it writes, with `$out`). */
const WRITE_CONCERN_COMMANDS = new Set([
  'insert',
  'update',
  'delete',
  'findAndModify',
  'create',
  'drop',
  'dropDatabase',
  'createIndexes',
  'dropIndexes',
  'collMod',
  'renameCollection',
  'commitTransaction',
  'abortTransaction',
]);

const HANDSHAKE_COMMANDS = new Set(['hello', 'isMaster', 'ismaster']);
const TRANSACTION_COMMANDS = new Set(['commitTransaction', 'abortTransaction']);
/** Commands a replica set member runs as retryable writes when they carry a transaction number. */
const RETRYABLE_WRITES = new Set(['insert', 'update', 'delete', 'findAndModify', 'findandmodify']);
const READ_CONCERN_LEVELS = new Set(['local', 'available', 'majority', 'linearizable', 'snapshot']);

/**
 * Answers one wire message; undefined when no reply is due (moreToCome). The
 * reply is a promise when the command waits (a getMore on an awaitData cursor).
 * Throws ProtocolError for anything unreadable: the caller closes that connection.
 */
export function handleMessage(engine: Engine, message: Buffer, connectionId: number): Buffer[] | Promise<Buffer[]> | undefined {
  const request = parseMessage(message);
  if (request.opCode === OP_QUERY) {
    const reply = runLegacyQuery(engine, request, connectionId);
    return Array.isArray(reply) ? encodeOpReply(request.requestId, reply) : reply.then((body) => encodeOpReply(request.requestId, body));
  }
  const reply = runOpMsg(engine, request, connectionId);
  if (request.flags & MORE_TO_COME) return undefined;
  return Array.isArray(reply) ? encodeOpMsg(request.requestId, reply) : reply.then((body) => encodeOpMsg(request.requestId, body));
}

function decode(raw: Buffer, options?: BSON.DeserializeOptions): Document {
  try {
    return BSON.deserialize(raw, options);
  } catch (error) {
    throw new ProtocolError(`invalid BSON: ${(error as Error).message}`);
  }
}

function firstKey(raw: Buffer): string {
  for (const [, nameOffset, nameLength] of BSON.onDemand.parseToElements(raw)) {
    return raw.toString('utf8', nameOffset, nameOffset + nameLength);
  }
  return '';
}

function runOpMsg(engine: Engine, message: OpMsgRequest, connectionId: number): ReplyBody | Promise<ReplyBody> {
  let name: string;
  try {
    name = firstKey(message.body);
  } catch (error) {
    throw new ProtocolError(`invalid BSON: ${(error as Error).message}`);
  }
  // Inserted documents stay as bytes: they are stored as sent.
  const body = decode(message.body, name === 'insert' ? { ...TYPED, fieldsAsRaw: { documents: true } } : TYPED);
  const db = body.$db;
  if (typeof db !== 'string') {
    return [errorReply(new CommandError(40571, 'OP_MSG requests require a $db argument'))];
  }
  return run(engine, new CommandRequest(name, db, body, message.sequences, connectionId));
}

/** Drivers open connections with a legacy OP_QUERY `isMaster`; MongoDB 5.1+ refuses any other OP_QUERY. */
function runLegacyQuery(engine: Engine, message: OpQueryRequest, connectionId: number): ReplyBody | Promise<ReplyBody> {
  let body = decode(message.query, TYPED);
  if (body.$query !== null && typeof body.$query === 'object') body = body.$query as Document;
  const name = Object.keys(body)[0] ?? '';
  const db = message.fullCollectionName.split('.')[0] ?? '';
  if (!message.fullCollectionName.endsWith('.$cmd') || !HANDSHAKE_COMMANDS.has(name)) {
    return [
      errorReply(
        new CommandError(
          ErrorCode.UnsupportedOpQueryCommand,
          `Unsupported OP_QUERY command: ${name}. The client driver may require an upgrade. For more details see https://dochub.mongodb.org/core/legacy-opcode-removal`,
        ),
      ),
    ];
  }
  return run(engine, new CommandRequest(name, db, body, new Map(), connectionId));
}

function run(engine: Engine, request: CommandRequest): ReplyBody | Promise<ReplyBody> {
  const finish = (reply: CommandReply): ReplyBody => withClusterTime(engine, encode(withLabels(request, reply)));
  const fail = (error: unknown): ReplyBody => {
    if (error instanceof CloseConnection) throw error;
    return withClusterTime(engine, errorReply(toCommandError(error), request));
  };
  try {
    const reply = execute(engine, request);
    return isPromise(reply) ? reply.then(finish, fail) : finish(reply);
  } catch (error) {
    return fail(error);
  }
}

function isPromise(reply: CommandReply | Promise<CommandReply>): reply is Promise<CommandReply> {
  return typeof (reply as Promise<CommandReply>).then === 'function';
}

/** The encoded `$clusterTime` and `operationTime` elements, for the latest cluster time (which changes only on writes). */
let clusterTimeFields: { time: Timestamp; elements: Buffer } | undefined;

/**
 * A replica set member's replies carry the cluster time and the time of the
 * operation, appended as a second piece so that a large reply is not copied.
 * `reply` is a fresh buffer of this command's, whose length it updates.
 */
function withClusterTime(engine: Engine, reply: Buffer): ReplyBody {
  if (engine.replicaSet === undefined) return [reply];
  const time = engine.oplog.latest();
  if (clusterTimeFields?.time !== time) {
    const fields = asBuffer(
      BSON.serialize({
        $clusterTime: { clusterTime: time, signature: { hash: new Binary(Buffer.alloc(20), 0), keyId: Long.fromNumber(0) } },
        operationTime: time,
      }),
    );
    clusterTimeFields = { time, elements: fields.subarray(4) };
  }
  const { elements } = clusterTimeFields;
  reply.writeInt32LE(reply.length - 1 + elements.length, 0);
  return [reply.subarray(0, reply.length - 1), elements];
}

/**
 * Runs a command in mongod's order: the command is looked up and its Stable
 * API parameters and session checked, then the failCommand fail point may
 * block, cut or fail it, then it runs, then the fail point may add a write
 * concern error.
 */
function execute(engine: Engine, request: CommandRequest): CommandReply | Promise<CommandReply> {
  const { body, name } = request;
  const handler = COMMANDS.get(name) ?? (engine.enableTestCommands ? TEST_COMMANDS.get(name) : undefined);
  if (!handler) throw new CommandError(ErrorCode.CommandNotFound, `no such command: '${name}'`);
  const command = canonical(name);
  checkApiParameters(command, body);
  const connection = engine.connections.get(request.connectionId);
  if (command === 'hello' && connection && connection.appName === '' && isPlainObject(body.client)) {
    const application = body.client.application;
    if (isPlainObject(application) && typeof application.name === 'string') connection.appName = application.name;
  }
  if (engine.replicaSet === undefined && (isInTransaction(request) || 'txnNumber' in body)) {
    throw new CommandError(ErrorCode.IllegalOperation, 'Transaction numbers are only allowed on a replica set member or mongos');
  }
  const target = failCommandTarget(engine, request, command, canonical);
  const blocked = failBeforeRunning(engine, request, target);
  if (blocked) return blocked.then(() => runCommand(engine, request, handler, target));
  return runCommand(engine, request, handler, target);
}

function isInTransaction({ name, body }: CommandRequest): boolean {
  return TRANSACTION_COMMANDS.has(name) || 'startTransaction' in body || 'autocommit' in body;
}

function runCommand(
  engine: Engine,
  request: CommandRequest,
  handler: CommandHandler,
  target: FailCommandTarget,
): CommandReply | Promise<CommandReply> {
  const { body } = request;
  // Not IllegalOperation: drivers read that code on a write as "retryable writes unsupported".
  if (isInTransaction(request)) throw refusal(ErrorCode.OperationNotSupportedInTransaction, 'A multi-document transaction');
  checkReadConcern(body.readConcern);
  const replicas = checkWriteConcern(engine, body.writeConcern);
  const reply = withWriteConcern(
    body.txnNumber === undefined ? handler(engine, request) : retryableWrite(engine, request, handler),
    replicas,
  );
  if (!takesWriteConcern(target.command, body)) return reply;
  const addFailPointError = (done: CommandReply): CommandReply => {
    const hasError = !Buffer.isBuffer(done) && done.writeConcernError !== undefined;
    const error = writeConcernErrorAfterRunning(engine, request, target, hasError);
    if (error === undefined) return done;
    return { ...(Buffer.isBuffer(done) ? BSON.deserialize(done, TYPED) : done), writeConcernError: error };
  };
  return isPromise(reply) ? reply.then(addFailPointError) : addFailPointError(reply);
}

function takesWriteConcern(command: string, body: Document): boolean {
  if (command === 'aggregate')
    return Array.isArray(body.pipeline) && body.pipeline.some((stage) => isPlainObject(stage) && '$out' in stage);
  return WRITE_CONCERN_COMMANDS.has(command);
}

/** A write with a transaction number: answered from the session's record when it was already applied. */
function retryableWrite(engine: Engine, request: CommandRequest, handler: CommandHandler): CommandReply | Promise<CommandReply> {
  const { body, name } = request;
  if (!RETRYABLE_WRITES.has(name)) {
    throw new CommandError(
      50768,
      `txnNumber may only be provided for multi-document transactions and retryable write commands. autocommit:false was not provided, and ${name} is not a retryable write command.`,
    );
  }
  if (!isPlainObject(body.lsid))
    throw new CommandError(ErrorCode.InvalidOptions, 'Transaction number requires a session ID to also be specified');
  const txnNumber = toCursorId(body.txnNumber);
  const now = engine.clock.now();
  const previous = engine.retryableWrites.previousReply(body.lsid, txnNumber, now);
  if (previous) return previous;
  const reply = handler(engine, request) as Document;
  engine.retryableWrites.record(body.lsid, txnNumber, reply, now);
  return reply;
}

/** What mongod knows of a command when it labels its error. */
function labelContext(request: CommandRequest): LabelContext {
  const { body } = request;
  const command = canonical(request.name);
  const pipeline: unknown = body.pipeline;
  const first: unknown = Array.isArray(pipeline) ? pipeline[0] : undefined;
  return {
    command,
    txnNumber: body.txnNumber !== undefined,
    autocommit: body.autocommit !== undefined,
    changeStream: command === 'aggregate' ? isPlainObject(first) && '$changeStream' in first : request.continuesChangeStream,
  };
}

/** A reply that carries a write concern error gets the labels mongod adds for it. */
function withLabels(request: CommandRequest, reply: CommandReply): CommandReply {
  if (Buffer.isBuffer(reply) || !isPlainObject(reply.writeConcernError)) return reply;
  const code: unknown = reply.writeConcernError.code;
  const labels = request.errorLabelsOverride ?? errorLabels(labelContext(request), undefined, isNumber(code) ? numberOf(code) : undefined);
  return labels.length > 0 ? { ...reply, errorLabels: labels } : reply;
}

/** Read concern levels are all served by the engine's single, always current copy, except snapshot reads. */
function checkReadConcern(readConcern: unknown): void {
  if (readConcern === undefined) return;
  if (!isPlainObject(readConcern))
    throw new CommandError(ErrorCode.TypeMismatch, "BSON field 'readConcern' is the wrong type, expected type 'object'");
  const level = readConcern.level;
  if (level !== undefined && !READ_CONCERN_LEVELS.has(level as string)) {
    throw new CommandError(
      ErrorCode.FailedToParse,
      `Enumeration value '${String(level)}' for field 'readConcern.level' is not a valid value.`,
    );
  }
  if (level === 'snapshot' || readConcern.atClusterTime !== undefined)
    throw refusal(ErrorCode.InvalidOptions, "readConcern level 'snapshot'");
}

/**
 * Write concerns: a standalone refuses w > 1 as mongod does; a single-member
 * set applies the write and reports that w > 1 cannot be satisfied. Journaled
 * acknowledgement is what a data directory gives every write (no reply is
 * sent before the write is on disk); in memory it is refused.
 * Returns the number of members asked for.
 */
function checkWriteConcern(engine: Engine, writeConcern: unknown): number {
  if (writeConcern === undefined) return 1;
  if (!isPlainObject(writeConcern))
    throw new CommandError(ErrorCode.TypeMismatch, "BSON field 'writeConcern' is the wrong type, expected type 'object'");
  const { w, j } = writeConcern;
  if (j === true && !engine.storage)
    throw refusal(ErrorCode.BadValue, 'writeConcern { j: true }', 'data is kept in memory, with no journal');
  if (typeof w === 'string') {
    if (w !== 'majority' && engine.replicaSet === undefined) {
      throw new CommandError(ErrorCode.BadValue, `cannot use non-majority 'w' mode ${w} when a host is not a member of a replica set`);
    }
    if (w !== 'majority')
      throw new CommandError(ErrorCode.UnknownReplWriteConcern, `No write concern mode named '${w}' found in replica set configuration`);
    return 1;
  }
  if (w === undefined) return 1;
  const n = isNumber(w) ? numberOf(w) : NaN;
  if (!Number.isInteger(n) || n < 0 || n > 50)
    throw new CommandError(ErrorCode.FailedToParse, `w has to be a non-negative number and not greater than 50; found: ${String(w)}`);
  if (n > 1 && engine.replicaSet === undefined)
    throw new CommandError(ErrorCode.BadValue, "cannot use 'w' > 1 when a host is not replicated");
  return n;
}

/** A write asked of more members than the set has: applied here, and reported as a write concern error. */
function withWriteConcern(reply: CommandReply | Promise<CommandReply>, replicas: number): CommandReply | Promise<CommandReply> {
  if (replicas <= 1 || Buffer.isBuffer(reply) || isPromise(reply)) return reply;
  return {
    ...reply,
    writeConcernError: {
      code: ErrorCode.UnsatisfiableWriteConcern,
      codeName: 'UnsatisfiableWriteConcern',
      errmsg: 'Not enough data-bearing nodes',
    },
  };
}

function encode(reply: CommandReply): Buffer {
  return Buffer.isBuffer(reply) ? reply : asBuffer(BSON.serialize(reply));
}

/** An error reply, with the labels mongod adds to it for this request. */
function errorReply(error: CommandError, request?: CommandRequest): Buffer {
  const labels = request ? (request.errorLabelsOverride ?? errorLabels(labelContext(request), error.code, undefined)) : [];
  return encode({ ok: 0, ...error.toDocument(), ...(labels.length > 0 ? { errorLabels: labels } : {}) });
}
