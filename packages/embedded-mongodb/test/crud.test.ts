import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { connect, type Connected, serverError } from './support/connect.js';

let t: Connected;

beforeAll(async () => {
  t = await connect();
});

afterAll(() => t?.stop());

const people = () => t.collection('people');

beforeEach(async () => {
  await people().deleteMany({});
});

describe('insert', () => {
  it('answers n and keeps the documents as sent, _id first', async () => {
    const reply = await t.db.command({ insert: 'people', documents: [{ name: 'ann', _id: 1 }, { name: 'bob' }] });
    expect(reply).toMatchObject({ n: 2, ok: 1 });
    const ann = await people().findOne({ name: 'ann' });
    expect(Object.keys(ann!)).toEqual(['_id', 'name']);
    const bob = await people().findOne({ name: 'bob' });
    expect(bob!._id).toBeInstanceOf(ObjectId);
  });

  it('stops an ordered insert at the first error and reports its index', async () => {
    const reply = await t.db.command({
      insert: 'people',
      documents: [
        { _id: 1, name: 'a' },
        { _id: 1, name: 'b' },
        { _id: 2, name: 'c' },
      ],
      ordered: true,
    });
    expect(reply.n).toBe(1);
    expect(reply.writeErrors).toHaveLength(1);
    expect(reply.writeErrors[0]).toMatchObject({ index: 1, code: 11000, keyPattern: { _id: 1 }, keyValue: { _id: 1 } });
    expect(await people().countDocuments()).toBe(1);
  });

  it('continues an unordered insert past errors', async () => {
    const reply = await t.db.command({
      insert: 'people',
      documents: [
        { _id: 1, name: 'a' },
        { _id: 1, name: 'b' },
        { _id: 2, name: 'c' },
        { _id: 2, name: 'd' },
      ],
      ordered: false,
    });
    expect(reply.n).toBe(2);
    expect(reply.writeErrors.map((e: { index: number }) => e.index)).toEqual([1, 3]);
    expect(await people().countDocuments()).toBe(2);
  });
});

describe('find', () => {
  beforeEach(async () => {
    await people().insertMany([
      { name: 'ann', age: 31, tags: ['a', 'b'] },
      { name: 'bob', age: 25, tags: ['b'] },
      { name: 'cid', age: 40 },
      { name: 'dee', age: 25, tags: [] },
    ]);
  });

  it('filters with query operators', async () => {
    const names = async (filter: object) => (await people().find(filter).sort({ name: 1 }).toArray()).map((p) => p.name);
    expect(await names({ age: 25 })).toEqual(['bob', 'dee']);
    expect(await names({ age: { $gt: 25, $lte: 40 } })).toEqual(['ann', 'cid']);
    expect(await names({ tags: 'b' })).toEqual(['ann', 'bob']);
    expect(await names({ tags: { $exists: false } })).toEqual(['cid']);
    expect(await names({ $or: [{ name: 'ann' }, { age: 40 }] })).toEqual(['ann', 'cid']);
    expect(await names({ name: { $in: ['dee', 'zed'] } })).toEqual(['dee']);
    expect(await names({ name: /^[bc]/ })).toEqual(['bob', 'cid']);
  });

  it('applies skip and limit after sorting', async () => {
    const page = await people().find({}).sort({ age: -1, name: 1 }).skip(1).limit(2).toArray();
    expect(page.map((p) => p.name)).toEqual(['ann', 'bob']);
  });

  it('returns an empty result for a collection that does not exist', async () => {
    expect(await t.collection('nothing-here').find({}).toArray()).toEqual([]);
  });
});

describe('update', () => {
  beforeEach(async () => {
    await people().insertMany([
      { _id: 1, name: 'ann', age: 31, tags: ['a'] },
      { _id: 2, name: 'bob', age: 25, tags: ['a', 'b'] },
      { _id: 3, name: 'cid', age: 40 },
    ]);
  });

  it('applies $set, $unset, $inc, $push, $pull and $addToSet', async () => {
    const update = (q: object, u: object) => t.db.command({ update: 'people', updates: [{ q, u }] });
    await update({ _id: 1 }, { $set: { city: 'Oslo' }, $inc: { age: 1 }, $push: { tags: 'c' } });
    await update({ _id: 2 }, { $unset: { age: '' }, $pull: { tags: 'a' } });
    await update({ _id: 2 }, { $addToSet: { tags: 'b' } });
    expect(await people().findOne({ _id: 1 })).toEqual({ _id: 1, name: 'ann', age: 32, tags: ['a', 'c'], city: 'Oslo' });
    expect(await people().findOne({ _id: 2 })).toEqual({ _id: 2, name: 'bob', tags: ['b'] });
  });

  it('answers n and nModified, and updates every match with multi', async () => {
    const reply = await t.db.command({ update: 'people', updates: [{ q: { tags: 'a' }, u: { $set: { seen: true } }, multi: true }] });
    expect(reply).toMatchObject({ n: 2, nModified: 2, ok: 1 });
    const again = await t.db.command({ update: 'people', updates: [{ q: { tags: 'a' }, u: { $set: { seen: true } }, multi: true }] });
    expect(again).toMatchObject({ n: 2, nModified: 0 });
    const single = await t.db.command({ update: 'people', updates: [{ q: {}, u: { $set: { one: 1 } } }] });
    expect(single).toMatchObject({ n: 1, nModified: 1 });
  });

  it('upserts with $setOnInsert and the filter equality fields, reporting upserted', async () => {
    const reply = await t.db.command({
      update: 'people',
      updates: [{ q: { name: 'eve', age: { $gt: 1 } }, u: { $set: { city: 'Rome' }, $setOnInsert: { created: true } }, upsert: true }],
    });
    expect(reply.n).toBe(1);
    expect(reply.nModified).toBe(0);
    expect(reply.upserted).toHaveLength(1);
    expect(reply.upserted[0].index).toBe(0);
    const eve = await people().findOne({ name: 'eve' });
    expect(eve).toEqual({ _id: reply.upserted[0]._id, name: 'eve', city: 'Rome', created: true });
    await people().updateOne({ name: 'eve' }, { $set: { city: 'Pisa' }, $setOnInsert: { created: false } }, { upsert: true });
    expect(await people().findOne({ name: 'eve' })).toMatchObject({ city: 'Pisa', created: true });
  });

  it('replaces a whole document and keeps its _id', async () => {
    const result = await people().replaceOne({ _id: 3 }, { name: 'cyd' });
    expect(result.modifiedCount).toBe(1);
    expect(await people().findOne({ _id: 3 })).toEqual({ _id: 3, name: 'cyd' });
  });

  it('updates array elements chosen by arrayFilters and the positional operator', async () => {
    await t.collection('grades').insertOne({ _id: 1, grades: [{ g: 80 }, { g: 95 }, { g: 70 }] });
    await t
      .collection('grades')
      .updateOne({ _id: 1 }, { $set: { 'grades.$[hi].top': true } }, { arrayFilters: [{ 'hi.g': { $gte: 90 } }] });
    await t.collection('grades').updateOne({ _id: 1, 'grades.g': 70 }, { $inc: { 'grades.$.g': 5 } });
    expect(await t.collection('grades').findOne({ _id: 1 })).toEqual({
      _id: 1,
      grades: [{ g: 80 }, { g: 95, top: true }, { g: 75 }],
    });
  });

  it('refuses two operators on the same path', async () => {
    const reply = await t.db.command({
      update: 'people',
      updates: [{ q: { _id: 2 }, u: { $pull: { tags: 'a' }, $addToSet: { tags: 'b' } } }],
    });
    expect(reply.writeErrors[0].code).toBe(40);
    expect(reply.writeErrors[0].errmsg).toBe("Updating the path 'tags' would create a conflict at 'tags'");
  });

  it('refuses to change _id', async () => {
    const error = await serverError(people().updateOne({ _id: 1 }, { $set: { _id: 9 } }));
    expect(error.code).toBe(66);
  });

  it('refuses $inc on a string and an unknown operator', async () => {
    const inc = await serverError(people().updateOne({ _id: 1 }, { $inc: { name: 1 } }));
    expect(inc.code).toBe(14);
    const unknown = await serverError(
      t.db.command({ update: 'people', updates: [{ q: {}, u: { $frob: { a: 1 } } }] }).then((r) => {
        if (r.writeErrors) throw Object.assign(new Error(r.writeErrors[0].errmsg), r.writeErrors[0]);
      }),
    );
    expect(unknown.code).toBe(9);
  });

  it('applies a pipeline-style update', async () => {
    await people().updateOne({ _id: 1 }, [{ $set: { label: { $concat: ['$name', '!'] } } }]);
    expect((await people().findOne({ _id: 1 }))!.label).toBe('ann!');
  });
});

describe('delete', () => {
  beforeEach(async () => {
    await people().insertMany([
      { name: 'a', age: 1 },
      { name: 'b', age: 1 },
      { name: 'c', age: 2 },
    ]);
  });

  it('deletes one match with limit 1 and all with limit 0', async () => {
    expect(await t.db.command({ delete: 'people', deletes: [{ q: { age: 1 }, limit: 1 }] })).toMatchObject({ n: 1, ok: 1 });
    expect(await people().countDocuments()).toBe(2);
    expect(await t.db.command({ delete: 'people', deletes: [{ q: {}, limit: 0 }] })).toMatchObject({ n: 2 });
    expect(await people().countDocuments()).toBe(0);
  });
});

describe('findAndModify', () => {
  beforeEach(async () => {
    await people().insertMany([
      { _id: 1, name: 'ann', age: 30 },
      { _id: 2, name: 'bob', age: 20 },
    ]);
  });

  it('returns the document before or after the update', async () => {
    const before = await t.db.command({ findAndModify: 'people', query: { _id: 1 }, update: { $inc: { age: 1 } } });
    expect(before).toMatchObject({ lastErrorObject: { n: 1, updatedExisting: true }, value: { _id: 1, age: 30 }, ok: 1 });
    const after = await t.db.command({ findAndModify: 'people', query: { _id: 1 }, update: { $inc: { age: 1 } }, new: true });
    expect(after.value).toEqual({ _id: 1, name: 'ann', age: 32 });
  });

  it('picks the first document in sort order and projects with fields', async () => {
    const reply = await t.db.command({
      findAndModify: 'people',
      query: {},
      sort: { age: 1 },
      update: { $set: { picked: true } },
      new: true,
      fields: { name: 1, _id: 0 },
    });
    expect(reply.value).toEqual({ name: 'bob' });
  });

  it('removes and returns the removed document', async () => {
    const reply = await t.db.command({ findAndModify: 'people', query: { name: 'bob' }, remove: true });
    expect(reply).toMatchObject({ lastErrorObject: { n: 1 }, value: { _id: 2, name: 'bob' } });
    expect(await people().countDocuments()).toBe(1);
  });

  it('upserts and reports the new _id in lastErrorObject', async () => {
    const reply = await t.db.command({
      findAndModify: 'people',
      query: { name: 'cid' },
      update: { $set: { age: 5 } },
      upsert: true,
      new: true,
    });
    expect(reply.lastErrorObject).toMatchObject({ n: 1, updatedExisting: false });
    expect(reply.lastErrorObject.upserted).toEqual(reply.value._id);
    expect(reply.value).toMatchObject({ name: 'cid', age: 5 });
  });

  it('answers value null when nothing matches', async () => {
    const reply = await t.db.command({ findAndModify: 'people', query: { name: 'nobody' }, update: { $set: { a: 1 } } });
    expect(reply).toMatchObject({ lastErrorObject: { n: 0, updatedExisting: false }, value: null, ok: 1 });
  });

  it('refuses remove together with new', async () => {
    const error = await serverError(t.db.command({ findAndModify: 'people', query: {}, remove: true, new: true }));
    expect(error.code).toBe(9);
  });
});

describe('count, distinct and aggregate', () => {
  beforeEach(async () => {
    await people().insertMany([
      { name: 'ann', age: 30, tags: ['x', 'y'] },
      { name: 'bob', age: 20, tags: ['y'] },
      { name: 'cid', age: 30 },
    ]);
  });

  it('counts with a query, skip and limit', async () => {
    expect(await t.db.command({ count: 'people', query: { age: 30 } })).toMatchObject({ n: 2, ok: 1 });
    expect((await t.db.command({ count: 'people', query: {}, skip: 1, limit: 1 })).n).toBe(1);
    expect(await people().estimatedDocumentCount()).toBe(3);
    expect(await people().countDocuments({ age: { $lt: 30 } })).toBe(1);
    expect((await t.db.command({ count: 'missing-collection' })).n).toBe(0);
  });

  it('lists distinct values, unwinding arrays', async () => {
    expect((await people().distinct('age')).sort()).toEqual([20, 30]);
    expect((await people().distinct('tags')).sort()).toEqual(['x', 'y']);
    expect(await people().distinct('name', { age: 20 })).toEqual(['bob']);
  });

  it('aggregates with a cursor', async () => {
    const groups = await people()
      .aggregate<{ _id: number; n: number }>([
        { $match: { age: { $gte: 20 } } },
        { $group: { _id: '$age', n: { $sum: 1 } } },
        { $sort: { _id: 1 } },
      ])
      .toArray();
    expect(groups).toEqual([
      { _id: 20, n: 1 },
      { _id: 30, n: 2 },
    ]);
    const reply = await t.db.command({
      aggregate: 'people',
      pipeline: [{ $sort: { name: 1 } }, { $project: { _id: 0, name: 1 } }],
      cursor: { batchSize: 2 },
    });
    expect(reply.cursor.firstBatch).toEqual([{ name: 'ann' }, { name: 'bob' }]);
    expect(reply.cursor.ns).toBe(`${t.database.dbName}.people`);
  });

  it('looks up documents of another collection', async () => {
    await t.collection('pets').insertMany([
      { owner: 'ann', pet: 'cat' },
      { owner: 'ann', pet: 'dog' },
    ]);
    const [ann] = await people()
      .aggregate([{ $match: { name: 'ann' } }, { $lookup: { from: 'pets', localField: 'name', foreignField: 'owner', as: 'pets' } }])
      .toArray();
    expect(ann!.pets.map((p: { pet: string }) => p.pet).sort()).toEqual(['cat', 'dog']);
  });
});
