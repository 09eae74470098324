/**
 * MongoDB wire protocol framing: OP_MSG (body and document-sequence
 * sections, optional CRC-32C checksum), the legacy OP_QUERY handshake and
 * its OP_REPLY answer.
 */

export const OP_REPLY = 1;
export const OP_QUERY = 2004;
export const OP_MSG = 2013;

export const MAX_MESSAGE_SIZE = 48_000_000;
const HEADER_SIZE = 16;

const CHECKSUM_PRESENT = 1 << 0;
export const MORE_TO_COME = 1 << 1;

/** A message that cannot be read: the connection that sent it is closed. */
export class ProtocolError extends Error {}

export interface OpMsgRequest {
  opCode: typeof OP_MSG;
  requestId: number;
  flags: number;
  body: Buffer;
  /** Document-sequence sections by identifier (e.g. `documents` of an insert). */
  sequences: Map<string, Buffer[]>;
}

export interface OpQueryRequest {
  opCode: typeof OP_QUERY;
  requestId: number;
  fullCollectionName: string;
  query: Buffer;
}

/** Splits a byte stream into whole messages; refuses lengths no valid message has. */
export class MessageFramer {
  private chunks: Buffer[] = [];
  private buffered = 0;

  push(chunk: Buffer): Buffer[] {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const messages: Buffer[] = [];
    while (this.buffered >= 4) {
      const head = this.chunks[0]!.length >= 4 ? this.chunks[0]! : this.flatten();
      const length = head.readInt32LE(0);
      if (length < HEADER_SIZE || length > MAX_MESSAGE_SIZE) {
        throw new ProtocolError(`invalid message length ${length}`);
      }
      if (this.buffered < length) break;
      const all = this.flatten();
      messages.push(all.subarray(0, length));
      const rest = all.subarray(length);
      this.chunks = rest.length > 0 ? [rest] : [];
      this.buffered = rest.length;
    }
    return messages;
  }

  private flatten(): Buffer {
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.buffered);
    this.chunks = [all];
    return all;
  }
}

export function parseMessage(message: Buffer): OpMsgRequest | OpQueryRequest {
  const requestId = message.readInt32LE(4);
  const opCode = message.readInt32LE(12);
  if (opCode === OP_MSG) return parseOpMsg(message, requestId);
  if (opCode === OP_QUERY) return parseOpQuery(message, requestId);
  throw new ProtocolError(`unsupported opCode ${opCode}`);
}

function parseOpMsg(message: Buffer, requestId: number): OpMsgRequest {
  if (message.length < HEADER_SIZE + 5) throw new ProtocolError('OP_MSG too short');
  const flags = message.readUInt32LE(16);
  let end = message.length;
  if (flags & CHECKSUM_PRESENT) {
    end -= 4;
    if (end < HEADER_SIZE + 5) throw new ProtocolError('OP_MSG too short for its checksum');
    if (crc32c(message.subarray(0, end)) !== message.readUInt32LE(end)) throw new ProtocolError('OP_MSG checksum mismatch');
  }
  let body: Buffer | undefined;
  const sequences = new Map<string, Buffer[]>();
  let at = 20;
  while (at < end) {
    const kind = message[at++];
    if (kind === 0) {
      if (body) throw new ProtocolError('OP_MSG with more than one body section');
      body = readDocument(message, at, end);
      at += body.length;
    } else if (kind === 1) {
      if (at + 4 > end) throw new ProtocolError('truncated document sequence');
      const size = message.readInt32LE(at);
      const sectionEnd = at + size;
      if (size < 5 || sectionEnd > end) throw new ProtocolError('invalid document sequence size');
      const nameEnd = message.indexOf(0, at + 4);
      if (nameEnd < 0 || nameEnd >= sectionEnd) throw new ProtocolError('invalid document sequence identifier');
      const identifier = message.toString('utf8', at + 4, nameEnd);
      const docs: Buffer[] = [];
      for (let d = nameEnd + 1; d < sectionEnd;) {
        const doc = readDocument(message, d, sectionEnd);
        docs.push(doc);
        d += doc.length;
      }
      sequences.set(identifier, docs);
      at = sectionEnd;
    } else {
      throw new ProtocolError(`unknown OP_MSG section kind ${String(kind)}`);
    }
  }
  if (!body) throw new ProtocolError('OP_MSG without a body section');
  return { opCode: OP_MSG, requestId, flags, body, sequences };
}

function parseOpQuery(message: Buffer, requestId: number): OpQueryRequest {
  const nameEnd = message.indexOf(0, 20);
  if (nameEnd < 0) throw new ProtocolError('OP_QUERY without a collection name');
  const fullCollectionName = message.toString('utf8', 20, nameEnd);
  const queryAt = nameEnd + 1 + 8; // numberToSkip, numberToReturn
  const query = readDocument(message, queryAt, message.length);
  return { opCode: OP_QUERY, requestId, fullCollectionName, query };
}

/** The BSON document starting at `at`, checked to fit before `end` and to be terminated. */
function readDocument(message: Buffer, at: number, end: number): Buffer {
  if (at + 5 > end) throw new ProtocolError('truncated document');
  const length = message.readInt32LE(at);
  if (length < 5 || at + length > end || message[at + length - 1] !== 0) throw new ProtocolError('invalid document length');
  return message.subarray(at, at + length);
}

let nextResponseId = 1;

function header(length: number, responseTo: number, opCode: number): Buffer {
  const out = Buffer.allocUnsafe(HEADER_SIZE);
  out.writeInt32LE(length, 0);
  out.writeInt32LE(nextResponseId++ & 0x7fffffff, 4);
  out.writeInt32LE(responseTo, 8);
  out.writeInt32LE(opCode, 12);
  return out;
}

/** A reply: one BSON document, possibly in several consecutive pieces. */
export type ReplyBody = Buffer[];

/** The bytes of a reply or of a whole message in pieces. */
export function sizeOf(body: ReplyBody): number {
  return body.reduce((sum, piece) => sum + piece.length, 0);
}

export function encodeOpMsg(responseTo: number, body: ReplyBody): Buffer[] {
  const flagsAndKind = Buffer.alloc(5); // flags 0, section kind 0
  return [header(HEADER_SIZE + 5 + sizeOf(body), responseTo, OP_MSG), flagsAndKind, ...body];
}

export function encodeOpReply(responseTo: number, body: ReplyBody): Buffer[] {
  const fields = Buffer.alloc(20); // responseFlags, cursorID (int64), startingFrom
  fields.writeInt32LE(1, 16); // numberReturned
  return [header(HEADER_SIZE + 20 + sizeOf(body), responseTo, OP_REPLY), fields, ...body];
}

let crcTable: Uint32Array | undefined;

/** CRC-32C (Castagnoli), the checksum OP_MSG uses. */
export function crc32c(bytes: Uint8Array): number {
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  let crc = 0xffffffff;
  for (const byte of bytes) crc = crcTable[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}
