import type { Document } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { connect, type Connected } from './support/connect.js';

let t: Connected;

const USERS = 100;
const PER_USER = 1000;

/** `count` conversations for each of `users` users, ids 1..count, inserted in id order per batch. */
async function fill(name: string, users: number, count: number): Promise<void> {
  const collection = t.collection(name);
  await collection.createIndex({ userId: 1, id: -1 }, { unique: true });
  for (let user = 1; user <= users; user += 10) {
    const batch: Document[] = [];
    for (let u = user; u < user + 10 && u <= users; u++) {
      for (let id = 1; id <= count; id++) batch.push({ userId: u, id, name: `conversation ${id}`, model: 'gpt-4o' });
    }
    await collection.insertMany(batch, { ordered: false });
  }
}

async function stats(name: string, filter: Document, sort?: Document, limit?: number, projection?: Document) {
  let cursor = t.collection(name).find(filter, projection ? { projection } : {});
  if (sort) cursor = cursor.sort(sort);
  if (limit) cursor = cursor.limit(limit);
  const explained = await cursor.explain('executionStats');
  return explained.executionStats as { nReturned: number; totalKeysExamined: number; totalDocsExamined: number };
}

beforeAll(async () => {
  t = await connect();
  await fill('small', 1, PER_USER);
  await fill('large', USERS, PER_USER);
}, 120_000);

afterAll(() => t?.stop());

describe('indexed queries do not scan the collection', () => {
  it('reads exactly 100 documents for the 100 newest of one user, with 1 000 or 100 000 documents stored', async () => {
    expect(await t.collection('large').estimatedDocumentCount()).toBe(USERS * PER_USER);
    for (const name of ['small', 'large']) {
      const s = await stats(name, { userId: 1 }, { id: -1 }, 100);
      expect(s.nReturned).toBe(100);
      expect(s.totalDocsExamined).toBe(100);
      expect(s.totalKeysExamined).toBeLessThanOrEqual(101);
    }
    const withProjection = await stats('large', { userId: 42 }, { id: -1 }, 100, { name: 1, id: 1 });
    expect(withProjection).toMatchObject({ nReturned: 100, totalDocsExamined: 100 });
  });

  it('returns the 100 newest in order', async () => {
    const page = await t
      .collection('large')
      .find({ userId: 42 }, { projection: { _id: 0, id: 1 } })
      .sort({ id: -1 })
      .limit(100)
      .toArray();
    expect(page.map((d) => d.id)).toEqual(Array.from({ length: 100 }, (_, i) => PER_USER - i));
  });

  it('looks up _id and _id $in through the _id index', async () => {
    const some = await t.collection('large').find({ userId: 7 }).limit(3).toArray();
    expect(await stats('large', { _id: some[0]!._id })).toMatchObject({ nReturned: 1, totalDocsExamined: 1 });
    expect(await stats('large', { _id: { $in: some.map((d) => d._id) } })).toMatchObject({ nReturned: 3, totalDocsExamined: 3 });
  });

  it('looks up several ids of one user through the compound index', async () => {
    expect(await stats('large', { userId: 9, id: { $in: [5, 500, 999] } })).toMatchObject({ nReturned: 3, totalDocsExamined: 3 });
  });

  it('uses the index for a range on the key after the equality prefix', async () => {
    const s = await stats('large', { userId: 9, id: { $lt: 50 } }, { id: -1 });
    expect(s).toMatchObject({ nReturned: 49, totalDocsExamined: 49 });
    const page = await t
      .collection('large')
      .find({ userId: 9, id: { $lt: 50 } })
      .sort({ id: -1 })
      .limit(3)
      .toArray();
    expect(page.map((d) => d.id)).toEqual([49, 48, 47]);
  });

  it('scans every document for a filter on an unindexed field', async () => {
    const s = await stats('large', { name: 'conversation 3' });
    expect(s.nReturned).toBe(USERS);
    expect(s.totalDocsExamined).toBe(USERS * PER_USER);
  });
});

describe('counting one user’s documents', () => {
  async function aggregateStats(pipeline: Document[]) {
    const explained = (await t.collection('large').aggregate(pipeline).explain('executionStats')) as {
      stages: [{ $cursor: { executionStats: { totalKeysExamined: number; totalDocsExamined: number } } }];
    };
    return explained.stages[0].$cursor.executionStats;
  }

  it('counts from the index alone, reading no document, as countDocuments asks', async () => {
    expect(await t.collection('large').countDocuments({ userId: 42 })).toBe(PER_USER);
    expect(await t.collection('large').countDocuments({ userId: 42, id: { $gt: 900 } })).toBe(100);
    expect(await aggregateStats([{ $match: { userId: 42 } }, { $group: { _id: 1, n: { $sum: 1 } } }])).toMatchObject({
      totalKeysExamined: PER_USER,
      totalDocsExamined: 0,
    });
    expect(await aggregateStats([{ $match: { userId: 42 } }, { $count: 'n' }])).toMatchObject({ totalDocsExamined: 0 });
  });

  it('answers what the $group or $count stage answers: the constant key and the count, nothing for no match', async () => {
    const collection = t.collection('large');
    expect(await collection.aggregate([{ $match: { userId: 5 } }, { $group: { _id: 'all', total: { $sum: 1 } } }]).toArray()).toEqual([
      { _id: 'all', total: PER_USER },
    ]);
    expect(await collection.aggregate([{ $match: { userId: 5, id: { $lte: 10 } } }, { $count: 'conversations' }]).toArray()).toEqual([
      { conversations: 10 },
    ]);
    expect(await collection.aggregate([{ $match: { userId: 12_345 } }, { $group: { _id: null, n: { $sum: 1 } } }]).toArray()).toEqual([]);
    expect(await collection.aggregate([{ $match: { userId: 12_345 } }, { $count: 'n' }]).toArray()).toEqual([]);
    expect(await collection.countDocuments({ userId: 12_345 })).toBe(0);
  });

  it('still reads the documents when the filter needs them, and counts what matches', async () => {
    expect(await t.collection('large').countDocuments({ userId: 42, name: 'conversation 7' })).toBe(1);
    expect(await aggregateStats([{ $match: { userId: 42, name: 'conversation 7' } }, { $count: 'n' }])).toMatchObject({
      totalDocsExamined: PER_USER,
    });
    // Any other stage gets the pipeline as before: here a sum of a field.
    expect(
      await t
        .collection('large')
        .aggregate([{ $match: { userId: 42, id: { $lte: 3 } } }, { $group: { _id: 1, n: { $sum: '$id' } } }])
        .toArray(),
    ).toEqual([{ _id: 1, n: 6 }]);
  });
});
