import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { connect, type Connected, serverError } from './support/connect.js';

let t: Connected;

const rows = [
  { _id: 1, group: 'b', score: 3, name: 'w', profile: { city: 'Oslo', zip: '0150' }, list: [5, 1, 9] },
  { _id: 2, group: 'a', score: 3, name: 'x', profile: { city: 'Rome', zip: '00100' }, list: [2] },
  { _id: 3, group: 'b', score: 1, name: 'y', profile: { city: 'Bern', zip: '3000' }, list: [] },
  { _id: 4, group: 'a', score: 7, name: 'z' },
  { _id: 5, group: 'a', score: 3, name: 'v', list: [7, 8] },
];

beforeAll(async () => {
  t = await connect();
  await t.collection('rows').insertMany(rows.map((r) => ({ ...r })));
});

afterAll(() => t?.stop());

const ids = async (sort: Record<string, 1 | -1>, filter = {}) =>
  (await t.collection('rows').find(filter).sort(sort).toArray()).map((d) => d._id);

describe('sort', () => {
  it('sorts on several keys with mixed directions', async () => {
    expect(await ids({ group: 1, score: -1, name: 1 })).toEqual([4, 5, 2, 1, 3]);
    expect(await ids({ score: 1, group: -1, _id: -1 })).toEqual([3, 1, 5, 2, 4]);
  });

  it('puts documents missing the field first in ascending order', async () => {
    expect((await ids({ 'profile.city': 1, _id: 1 })).slice(0, 2)).toEqual([4, 5]);
  });

  it('sorts an array field by its smallest element ascending and largest descending', async () => {
    expect(await ids({ list: 1, _id: 1 }, { list: { $ne: [] }, _id: { $in: [1, 2, 5] } })).toEqual([1, 2, 5]);
    expect(await ids({ list: -1, _id: 1 }, { _id: { $in: [1, 2, 5] } })).toEqual([1, 5, 2]);
  });

  it('orders values of different types the way MongoDB compares them', async () => {
    const mixed = t.collection('mixed');
    const oid = new ObjectId();
    await mixed.insertMany([
      { _id: 'date', v: new Date(0) },
      { _id: 'string', v: 'a' },
      { _id: 'number', v: 10 },
      { _id: 'null', v: null },
      { _id: 'bool', v: true },
      { _id: 'oid', v: oid },
      { _id: 'object', v: { a: 1 } },
    ]);
    const order = (await mixed.find({}).sort({ v: 1 }).toArray()).map((d) => d._id);
    expect(order).toEqual(['null', 'number', 'string', 'object', 'oid', 'bool', 'date']);
  });
});

describe('projection', () => {
  it('includes fields in document order, _id included unless excluded', async () => {
    const doc = await t.collection('rows').findOne({ _id: 1 }, { projection: { name: 1, group: 1 } });
    expect(doc).toEqual({ _id: 1, group: 'b', name: 'w' });
    expect(Object.keys(doc!)).toEqual(['_id', 'group', 'name']);
    const noId = await t.collection('rows').findOne({ _id: 1 }, { projection: { name: 1, _id: 0 } });
    expect(noId).toEqual({ name: 'w' });
  });

  it('excludes fields', async () => {
    const doc = await t.collection('rows').findOne({ _id: 2 }, { projection: { profile: 0, list: 0 } });
    expect(doc).toEqual({ _id: 2, group: 'a', score: 3, name: 'x' });
    const onlyId = await t.collection('rows').findOne({ _id: 2 }, { projection: { _id: 0, group: 0, score: 0, name: 0, profile: 0 } });
    expect(onlyId).toEqual({ list: [2] });
  });

  it('projects dotted paths and $slice', async () => {
    const doc = await t.collection('rows').findOne({ _id: 1 }, { projection: { 'profile.city': 1, list: { $slice: 2 } } });
    expect(doc).toEqual({ _id: 1, profile: { city: 'Oslo' }, list: [5, 1] });
  });

  it('refuses to mix inclusion and exclusion', async () => {
    const error = await serverError(t.collection('rows').findOne({}, { projection: { name: 1, group: 0 } }));
    expect(error.code).toBe(31254);
  });
});
