import { type CommandStartedEvent, Long } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { type AnyDocument, connect, type Connected, serverError } from './support/connect.js';

let t: Connected;
const started: CommandStartedEvent[] = [];

beforeAll(async () => {
  t = await connect({ monitorCommands: true });
  t.client.on('commandStarted', (event) => started.push(event));
  await t.collection('numbers').insertMany(Array.from({ length: 1000 }, (_, i) => ({ _id: i, n: i })));
});

afterAll(() => t?.stop());

function commandsDuring(name: string, work: () => Promise<unknown>): Promise<number> {
  const before = started.filter((e) => e.commandName === name).length;
  return work().then(() => started.filter((e) => e.commandName === name).length - before);
}

describe('cursors', () => {
  it('returns 1 000 documents in order through many batches of 7', async () => {
    let docs: AnyDocument[] = [];
    const getMores = await commandsDuring('getMore', async () => {
      docs = await t.collection('numbers').find({}, { batchSize: 7 }).sort({ n: 1 }).toArray();
    });
    expect(docs.map((d) => d.n)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    expect(getMores).toBeGreaterThanOrEqual(Math.ceil(1000 / 7) - 1);
  });

  it('sends a first batch of 101 by default and closes an exhausted cursor with id 0', async () => {
    const first = await t.db.command({ find: 'numbers', filter: {}, sort: { n: 1 } });
    expect(first.cursor.firstBatch).toHaveLength(101);
    expect(first.cursor.ns).toBe(`${t.database.dbName}.numbers`);
    expect(Long.fromValue(first.cursor.id).isZero()).toBe(false);
    const rest = await t.db.command({ getMore: first.cursor.id, collection: 'numbers' });
    expect(rest.cursor.nextBatch).toHaveLength(899);
    expect(Long.fromValue(rest.cursor.id).isZero()).toBe(true);
  });

  it('honours batchSize on getMore', async () => {
    const first = await t.db.command({ find: 'numbers', filter: { n: { $lt: 20 } }, sort: { n: 1 }, batchSize: 5 });
    expect(first.cursor.firstBatch.map((d: { n: number }) => d.n)).toEqual([0, 1, 2, 3, 4]);
    const next = await t.db.command({ getMore: first.cursor.id, collection: 'numbers', batchSize: 10 });
    expect(next.cursor.nextBatch.map((d: { n: number }) => d.n)).toEqual([5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
  });

  it('closes the cursor at the limit and with singleBatch', async () => {
    const limited = await t.db.command({ find: 'numbers', filter: {}, limit: 3 });
    expect(limited.cursor.firstBatch).toHaveLength(3);
    expect(Long.fromValue(limited.cursor.id).isZero()).toBe(true);
    const single = await t.db.command({ find: 'numbers', filter: {}, batchSize: 2, singleBatch: true });
    expect(single.cursor.firstBatch).toHaveLength(2);
    expect(Long.fromValue(single.cursor.id).isZero()).toBe(true);
  });

  it('kills cursors, after which getMore fails with CursorNotFound', async () => {
    const first = await t.db.command({ find: 'numbers', filter: {}, batchSize: 2 });
    const killed = await t.db.command({ killCursors: 'numbers', cursors: [first.cursor.id] });
    expect(killed.cursorsKilled.map((id: unknown) => Long.fromValue(id as Long).toString())).toEqual([
      Long.fromValue(first.cursor.id).toString(),
    ]);
    const error = await serverError(t.db.command({ getMore: first.cursor.id, collection: 'numbers' }));
    expect(error.code).toBe(43);
    expect(error.codeName).toBe('CursorNotFound');
  });

  it('lets the driver close a cursor it did not exhaust', async () => {
    const cursor = t.collection('numbers').find({}, { batchSize: 3 });
    await cursor.next();
    const kills = await commandsDuring('killCursors', () => cursor.close());
    expect(kills).toBe(1);
  });

  it('keeps an index-order cursor going while other writes happen between batches', async () => {
    const cursor = t
      .collection('numbers')
      .find({ _id: { $gte: 900 } }, { batchSize: 10 })
      .sort({ _id: 1 });
    const seen: number[] = [];
    for await (const doc of cursor) {
      seen.push(doc.n);
      if (doc.n === 905) await t.collection('numbers').deleteOne({ n: 950 });
    }
    expect(seen).toHaveLength(99);
    expect(seen).not.toContain(950);
  });

  it('answers batches of large documents, sent as their pieces, byte for byte and split at 16 MiB', async () => {
    // Each about 3 MiB: a first batch holds five (the sixth would pass 16 MiB), a getMore the rest.
    const large = Array.from({ length: 8 }, (_, i) => ({ _id: i, body: String.fromCharCode(97 + i).repeat(3 * 1024 * 1024), n: i }));
    const collection = t.collection('large');
    for (const doc of large) await collection.insertOne(doc);
    const first = await t.db.command({ find: 'large', filter: {}, sort: { _id: 1 }, projection: { n: 0 } });
    expect(first.cursor.firstBatch.map((d: { _id: number }) => d._id)).toEqual([0, 1, 2, 3, 4]);
    const rest = await t.db.command({ getMore: first.cursor.id, collection: 'large' });
    const answered = [...first.cursor.firstBatch, ...rest.cursor.nextBatch];
    expect(answered).toEqual(large.map(({ _id, body }) => ({ _id, body })));
    // The connection still answers in order after them.
    expect((await t.db.command({ ping: 1 })).ok).toBe(1);
  });
});
