import { connect as netConnect, type Socket } from 'node:net';

import { BSON, type Document } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { connect, type Connected } from './support/connect.js';

let t: Connected;
let host: string;
let port: number;

beforeAll(async () => {
  t = await connect();
  const url = new URL(t.database.uri);
  host = url.hostname.replace(/^\[|\]$/g, '');
  port = Number(url.port || 27017);
});

afterAll(() => t?.stop());

/** CRC-32C (Castagnoli), written out here as the test's own oracle. */
function crc32c(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? 0x82f63b78 ^ (crc >>> 1) : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

function opMsg(body: Document | Buffer, options: { checksum?: boolean; opCode?: number } = {}): Buffer {
  const doc = Buffer.isBuffer(body) ? body : Buffer.from(BSON.serialize(body));
  const header = Buffer.alloc(21);
  const length = 21 + doc.length + (options.checksum ? 4 : 0);
  header.writeInt32LE(length, 0);
  header.writeInt32LE(7, 4);
  header.writeInt32LE(options.opCode ?? 2013, 12);
  header.writeUInt32LE(options.checksum ? 1 : 0, 16);
  const message = Buffer.concat([header, doc]);
  if (!options.checksum) return message;
  const sum = Buffer.alloc(4);
  sum.writeUInt32LE(crc32c(message), 0);
  return Buffer.concat([message, sum]);
}

interface Outcome {
  reply?: Document;
  closed: boolean;
}

/** Sends raw bytes and waits for a reply or for the server to close the connection. */
function exchange(bytes: Buffer, waitMs = 2000): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket: Socket = netConnect({ host, port });
    let received = Buffer.alloc(0);
    const finish = (outcome: Outcome) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(() => finish({ closed: false }), waitMs);
    socket.on('connect', () => socket.write(bytes));
    socket.on('data', (chunk) => {
      received = Buffer.concat([received, chunk]);
      if (received.length >= 4 && received.length >= received.readInt32LE(0)) {
        finish({ reply: BSON.deserialize(received.subarray(21, received.readInt32LE(0))), closed: false });
      }
    });
    socket.on('close', () => finish({ closed: true }));
    socket.on('error', () => finish({ closed: true }));
  });
}

async function otherClientStillWorks(): Promise<void> {
  expect(await t.db.command({ ping: 1 })).toMatchObject({ ok: 1 });
}

describe('wire protocol', () => {
  it('answers an OP_MSG sent by hand', async () => {
    const outcome = await exchange(opMsg({ ping: 1, $db: 'admin' }));
    expect(outcome.reply).toMatchObject({ ok: 1 });
  });

  it('accepts an OP_MSG carrying a valid CRC-32C checksum', async () => {
    const outcome = await exchange(opMsg({ ping: 1, $db: 'admin' }, { checksum: true }));
    expect(outcome.reply).toMatchObject({ ok: 1 });
  });

  it('closes the connection on a message length smaller than a header', async () => {
    const bytes = Buffer.alloc(16);
    bytes.writeInt32LE(5, 0);
    expect(await exchange(bytes)).toEqual({ closed: true });
    await otherClientStillWorks();
  });

  it('closes the connection on a message larger than maxMessageSizeBytes', async () => {
    const bytes = opMsg({ ping: 1, $db: 'admin' });
    bytes.writeInt32LE(48_000_001, 0);
    expect(await exchange(bytes)).toEqual({ closed: true });
    await otherClientStillWorks();
  });

  it('closes the connection on an unknown opcode', async () => {
    expect(await exchange(opMsg({ ping: 1, $db: 'admin' }, { opCode: 4242 }))).toEqual({ closed: true });
    await otherClientStillWorks();
  });

  it('closes the connection on garbage BSON', async () => {
    const garbage = Buffer.from([0x10, 0, 0, 0, 0x7f, 0x41, 0x42, 0, 1, 2, 3, 4, 5, 6, 7, 0]);
    expect(await exchange(opMsg(garbage))).toEqual({ closed: true });
    await otherClientStillWorks();
  });

  it('closes the connection on a bad checksum', async () => {
    const bytes = opMsg({ ping: 1, $db: 'admin' }, { checksum: true });
    bytes.writeUInt32LE((bytes.readUInt32LE(bytes.length - 4) + 1) >>> 0, bytes.length - 4);
    expect(await exchange(bytes)).toEqual({ closed: true });
    await otherClientStillWorks();
  });

  it('carries out an unacknowledged write (moreToCome) without answering it', async () => {
    await t.collection('fire-and-forget').insertOne({ a: 1 }, { writeConcern: { w: 0 } });
    await expect.poll(() => t.collection('fire-and-forget').countDocuments(), { timeout: 2000 }).toBe(1);
  });
});
