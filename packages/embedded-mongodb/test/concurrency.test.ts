import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { connect, type Connected } from './support/connect.js';

let t: Connected;

beforeAll(async () => {
  t = await connect({ maxPoolSize: 20 });
});

afterAll(() => t?.stop());

describe('atomic commands under concurrency', () => {
  it('hands out 60 distinct values to 60 concurrent findOneAndUpdate $inc calls from separate clients', async () => {
    await t.collection('counters').insertOne({ _id: 'seq', value: 0 });
    const clients = await Promise.all(Array.from({ length: 6 }, () => MongoClient.connect(t.database.uri, { maxPoolSize: 10 })));
    try {
      const values = await Promise.all(
        Array.from({ length: 60 }, async (_, i) => {
          const client = clients[i % clients.length]!;
          const doc = await client
            .db(t.database.dbName)
            .collection<{ _id: string; value: number }>('counters')
            .findOneAndUpdate({ _id: 'seq' }, { $inc: { value: 1 } }, { returnDocument: 'after' });
          return doc!.value;
        }),
      );
      expect(new Set(values).size).toBe(60);
      expect([...values].sort((a, b) => a - b)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });

  it('lets exactly one of many racing inserts of the same unique key win', async () => {
    await t.collection('claims').createIndex({ key: 1 }, { unique: true });
    const results = await Promise.allSettled(Array.from({ length: 30 }, (_, i) => t.collection('claims').insertOne({ key: 'k', by: i })));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(results.filter((r) => r.status === 'rejected' && (r.reason as { code?: number }).code === 11000)).toHaveLength(29);
  });

  it('applies every one of many concurrent $inc updates', async () => {
    await t.collection('balances').insertOne({ _id: 'a', points: 0 });
    await Promise.all(Array.from({ length: 100 }, () => t.collection('balances').updateOne({ _id: 'a' }, { $inc: { points: 2 } })));
    expect((await t.collection('balances').findOne({ _id: 'a' }))!.points).toBe(200);
  });
});
