import { Binary, type Document, ObjectId } from 'mongodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { connect, type Connected, serverError } from '../support/connect.js';

/** Update behaviour that differed from MongoDB's (B1–B3, B8, B10, B11, B12, B14, B16, B19); each test passes against MongoDB too. */
let t: Connected;

beforeAll(async () => {
  t = await connect();
});
afterAll(() => t?.stop());

const docs = () => t.collection('updates');

beforeEach(async () => {
  await docs().deleteMany({});
});

describe('_id in updates (B1, B8, B14)', () => {
  it('allows $set of _id to the value it already has, also in an upsert', async () => {
    await docs().insertOne({ _id: 1, a: 1 });
    const result = await docs().updateOne({ _id: 1 }, { $set: { _id: 1, a: 2 } });
    expect(result.modifiedCount).toBe(1);
    const upsert = await docs().updateOne({ _id: 2 }, { $set: { _id: 2, b: 1 } }, { upsert: true });
    expect(upsert.upsertedId).toBe(2);
    expect(await docs().find().sort({ _id: 1 }).toArray()).toEqual([
      { _id: 1, a: 2 },
      { _id: 2, b: 1 },
    ]);
  });

  it('refuses $set of _id to another value with ImmutableField', async () => {
    await docs().insertOne({ _id: 1 });
    const error = await serverError(docs().updateOne({ _id: 1 }, { $set: { _id: 5 } }));
    expect(error.code).toBe(66);
    expect(await docs().findOne({})).toEqual({ _id: 1 });
  });

  it('keeps the original _id when a pipeline update leaves it out', async () => {
    await docs().insertOne({ _id: 1, a: 1, b: 2 });
    await docs().updateOne({ _id: 1 }, [{ $project: { _id: 0, a: 1 } }]);
    expect(await docs().findOne({})).toEqual({ _id: 1, a: 1 });
  });

  it('stores _id: null from an upserted replacement', async () => {
    const result = await docs().replaceOne({ a: 1 }, { _id: null, a: 1 } as Document, { upsert: true });
    expect(result.upsertedId).toBeNull();
    expect(
      await docs()
        .find({ _id: null } as Document)
        .toArray(),
    ).toEqual([{ _id: null, a: 1 }]);
  });
});

describe('paths through arrays (B2, B11)', () => {
  it('sets several fields through the same positional element without a conflict', async () => {
    await docs().insertOne({
      _id: 1,
      a: [
        { x: 0, y: 0 },
        { x: 5, y: 5 },
      ],
    });
    await docs().updateOne({ _id: 1, 'a.x': 5 }, { $set: { 'a.$.x': 6, 'a.$.y': 7 } });
    await docs().updateOne({ _id: 1 }, { $set: { 'a.$[].y': 1, 'a.$[].x': 2 } });
    await docs().updateOne({ _id: 1 }, { $inc: { 'a.$[e].x': 10, 'a.$[e].y': 20 } }, { arrayFilters: [{ 'e.x': 2 }] });
    expect(await docs().findOne({})).toEqual({
      _id: 1,
      a: [
        { x: 12, y: 21 },
        { x: 12, y: 21 },
      ],
    });
  });

  it('still refuses two updates of the same path', async () => {
    await docs().insertOne({ _id: 1, a: [{ x: 0 }] });
    const error = await serverError(docs().updateOne({ _id: 1, 'a.x': 0 }, { $set: { 'a.$.x': 1 }, $inc: { 'a.$.x': 1 } }));
    expect(error.code).toBe(40);
  });

  it('refuses $set of a field through an array of subdocuments with PathNotViable', async () => {
    await docs().insertOne({ _id: 1, comments: [{ body: 'a' }, { body: 'b' }] });
    const error = await serverError(docs().updateOne({ _id: 1 }, { $set: { 'comments.body': 'c' } }));
    expect(error.code).toBe(28);
    expect(error.message).toMatch(/^Cannot create field 'body' in element \{comments: /);
    expect(await docs().findOne({})).toEqual({ _id: 1, comments: [{ body: 'a' }, { body: 'b' }] });
  });
});

describe('$pull (B3)', () => {
  it('removes the elements an $or or $and condition matches', async () => {
    const [a, b, c] = [new ObjectId(), new ObjectId(), new ObjectId()];
    await docs().insertOne({
      _id: 1,
      items: [
        { _id: a, n: 1 },
        { _id: b, n: 2 },
        { _id: c, n: 3 },
      ],
    });
    await docs().updateOne({ _id: 1 }, { $pull: { items: { $or: [{ _id: a }, { _id: c }] } } } as Document);
    expect((await docs().findOne({}))!.items).toEqual([{ _id: b, n: 2 }]);
    await docs().updateOne({ _id: 1 }, { $pull: { items: { $and: [{ n: { $gt: 1 } }, { n: { $lt: 3 } }] } } } as Document);
    expect((await docs().findOne({}))!.items).toEqual([]);
  });

  it('tests scalar elements against operators and documents against a query', async () => {
    await docs().insertOne({ _id: 1, n: [1, 5, 9], d: [{ a: 1 }, { a: 2, b: 1 }, 3] });
    await docs().updateOne({ _id: 1 }, { $pull: { n: { $gte: 5 }, d: { a: 2 } } } as Document);
    expect(await docs().findOne({})).toEqual({ _id: 1, n: [1], d: [{ a: 1 }, 3] });
  });
});

describe('binary data (B10)', () => {
  it('treats a change of subtype alone as a modification', async () => {
    await docs().insertOne({ _id: 1, bin: new Binary(Buffer.from([1, 2]), 0) });
    const result = await docs().updateOne({ _id: 1 }, { $set: { bin: new Binary(Buffer.from([1, 2]), 5) } });
    expect(result.modifiedCount).toBe(1);
    expect(((await docs().findOne({}))!.bin as Binary).sub_type).toBe(5);
  });
});

describe('dollar-prefixed and dotted field names (B12)', () => {
  it('lets an upsert insert a $-prefixed field, as an insert would', async () => {
    const _id = new ObjectId();
    await docs().updateOne({ _id }, { $set: { $myKey: 'value', 'nested.$inner': 1 } }, { upsert: true });
    expect(await docs().findOne({ _id })).toEqual({ _id, $myKey: 'value', nested: { $inner: 1 } });
  });

  it('refuses to update a top-level $-prefixed field of an existing document', async () => {
    await docs().insertOne({ _id: 1 });
    const error = await serverError(docs().updateOne({ _id: 1 }, { $set: { $myKey: 'value' } }));
    expect(error.code).toBe(52);
  });

  it('sets a field whose name contains a dot with $setField', async () => {
    await docs().insertOne({ _id: 1, a: 1 });
    await docs().updateOne({ _id: 1 }, [{ $replaceWith: { $setField: { field: 'x.y', input: '$$ROOT', value: 2 } } }]);
    const doc = await docs().findOne({ _id: 1 });
    expect(Object.keys(doc!)).toEqual(['_id', 'a', 'x.y']);
    expect(await docs().countDocuments({ $expr: { $eq: [{ $getField: 'x.y' }, 2] } })).toBe(1);
  });

  it('refuses an _id holding $-prefixed fields', async () => {
    const error = await serverError(docs().insertOne({ _id: { $bad: 1 } } as unknown as Document));
    expect(error.code).toBe(52);
    expect(await docs().countDocuments()).toBe(0);
  });
});

describe('fields named __proto__ (B19)', () => {
  it('keeps a __proto__ field written with $set, and renames into one', async () => {
    await docs().insertOne({ _id: 1, a: 5 });
    await docs().updateOne({ _id: 1 }, { $set: JSON.parse('{"__proto__": {"kept": true}}') as Document });
    await docs().updateOne({ _id: 1 }, { $rename: { a: '__proto__.x' } });
    const doc = await docs().findOne({ _id: 1 });
    expect(JSON.stringify(doc)).toBe('{"_id":1,"__proto__":{"kept":true,"x":5}}');
    expect(await docs().countDocuments({ '__proto__.x': 5 })).toBe(1);
  });
});

describe('the update statement field sort (B16)', () => {
  it('is unknown to a 7.0 server and refused rather than ignored', async () => {
    const { version } = await t.db.admin().command({ buildInfo: 1 });
    await docs().insertMany([
      { _id: 1, n: 1 },
      { _id: 2, n: 2 },
    ]);
    const command = { update: 'updates', updates: [{ q: {}, u: { $set: { hit: true } }, sort: { n: -1 } }] };
    if (Number(String(version).split('.')[0]) >= 8) {
      await t.db.command(command);
      expect(await docs().findOne({ hit: true })).toMatchObject({ _id: 2 });
      return;
    }
    const error = await serverError(t.db.command(command));
    expect(error.code).toBe(40415);
    expect(await docs().countDocuments({ hit: true })).toBe(0);
  });
});
