import { BSON, type Document } from 'bson';
import type { Engine } from '../engine.js';
import { CommandError, ErrorCode, toCommandError } from '../errors.js';
import { asBuffer } from '../raw-bson.js';
import {
  encodeOpMsg,
  encodeOpReply,
  MORE_TO_COME,
  OP_QUERY,
  parseMessage,
  ProtocolError,
  type OpMsgRequest,
  type OpQueryRequest,
} from '../wire.js';
import { adminCommands } from './admin.js';
import { ddlCommands } from './ddl.js';
import { readCommands } from './read.js';
import { CommandRequest, type CommandHandler, type CommandReply } from './request.js';
import { writeCommands } from './write.js';

const COMMANDS = new Map<string, CommandHandler>(
  Object.entries({ ...adminCommands, ...readCommands, ...writeCommands, ...ddlCommands }),
);

const HANDSHAKE_COMMANDS = new Set(['hello', 'isMaster', 'ismaster']);
const TRANSACTION_COMMANDS = new Set(['commitTransaction', 'abortTransaction']);

/**
 * Answers one wire message; undefined when no reply is due (moreToCome).
 * Throws ProtocolError for anything unreadable: the caller closes that connection.
 */
export function handleMessage(engine: Engine, message: Buffer, connectionId: number): Buffer[] | undefined {
  const request = parseMessage(message);
  if (request.opCode === OP_QUERY) return encodeOpReply(request.requestId, runLegacyQuery(engine, request, connectionId));
  const reply = runOpMsg(engine, request, connectionId);
  return request.flags & MORE_TO_COME ? undefined : encodeOpMsg(request.requestId, reply);
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

function runOpMsg(engine: Engine, message: OpMsgRequest, connectionId: number): Buffer {
  let name: string;
  try {
    name = firstKey(message.body);
  } catch (error) {
    throw new ProtocolError(`invalid BSON: ${(error as Error).message}`);
  }
  // Inserted documents stay as bytes: they are stored as sent.
  const body = decode(message.body, name === 'insert' ? { fieldsAsRaw: { documents: true } } : undefined);
  const db = body.$db;
  if (typeof db !== 'string') {
    return errorReply(new CommandError(40571, 'OP_MSG requests require a $db argument'));
  }
  return run(engine, new CommandRequest(name, db, body, message.body, message.sequences, connectionId));
}

/** Drivers open connections with a legacy OP_QUERY `isMaster`; MongoDB 5.1+ refuses any other OP_QUERY. */
function runLegacyQuery(engine: Engine, message: OpQueryRequest, connectionId: number): Buffer {
  let body = decode(message.query);
  if (body.$query !== null && typeof body.$query === 'object') body = body.$query as Document;
  const name = Object.keys(body)[0] ?? '';
  const db = message.fullCollectionName.split('.')[0] ?? '';
  if (!message.fullCollectionName.endsWith('.$cmd') || !HANDSHAKE_COMMANDS.has(name)) {
    return errorReply(
      new CommandError(
        ErrorCode.UnsupportedOpQueryCommand,
        `Unsupported OP_QUERY command: ${name}. The client driver may require an upgrade. For more details see https://dochub.mongodb.org/core/legacy-opcode-removal`,
      ),
    );
  }
  return run(engine, new CommandRequest(name, db, body, message.query, new Map(), connectionId));
}

function run(engine: Engine, request: CommandRequest): Buffer {
  try {
    return encode(execute(engine, request));
  } catch (error) {
    return errorReply(toCommandError(error));
  }
}

function execute(engine: Engine, request: CommandRequest): CommandReply {
  const { body, name } = request;
  // A standalone mongod has no transactions.
  if (TRANSACTION_COMMANDS.has(name) || 'txnNumber' in body || 'startTransaction' in body || 'autocommit' in body) {
    throw new CommandError(ErrorCode.IllegalOperation, 'Transaction numbers are only allowed on a replica set member or mongos');
  }
  const handler = COMMANDS.get(name);
  if (!handler) throw new CommandError(ErrorCode.CommandNotFound, `no such command: '${name}'`);
  return handler(engine, request);
}

function encode(reply: CommandReply): Buffer {
  return Buffer.isBuffer(reply) ? reply : asBuffer(BSON.serialize(reply));
}

function errorReply(error: CommandError): Buffer {
  return encode({ ok: 0, ...error.toDocument() });
}
