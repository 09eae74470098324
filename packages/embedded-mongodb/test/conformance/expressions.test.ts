import { type Document } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { connect, type Connected, serverError } from '../support/connect.js';

/** Aggregation expressions that differed from MongoDB's: comparisons across types; each test passes against MongoDB too. */
let t: Connected;

beforeAll(async () => {
  t = await connect();
});
afterAll(() => t?.stop());

const sortedIds = (docs: Document[]): unknown[] => docs.map((doc) => doc._id).sort();

describe('comparison expressions', () => {
  beforeAll(async () => {
    await t
      .collection('values')
      .insertMany([
        { _id: 'date', v: new Date(0) },
        { _id: 'number', v: 5 },
        { _id: 'string', v: '5' },
        { _id: 'null', v: null },
        { _id: 'missing' },
        { _id: 'array', v: [1, 10] },
      ]);
  });

  const answers = async (expression: Document): Promise<Record<string, unknown>> => {
    const docs = await t
      .collection('values')
      .aggregate([{ $project: { answer: expression } }])
      .toArray();
    return Object.fromEntries(docs.map((doc) => [doc._id, doc.answer]));
  };

  it('order values of different types by the BSON order, a missing value below null', async () => {
    expect(await answers({ $gt: ['$v', null] })).toEqual({
      date: true,
      number: true,
      string: true,
      null: false,
      missing: false,
      array: true,
    });
    expect(await answers({ $gte: ['$v', null] })).toEqual({
      date: true,
      number: true,
      string: true,
      null: true,
      missing: false,
      array: true,
    });
    expect(await answers({ $eq: ['$v', null] })).toEqual({
      date: false,
      number: false,
      string: false,
      null: true,
      missing: false,
      array: false,
    });
    expect(await answers({ $ne: ['$v', null] })).toEqual({
      date: true,
      number: true,
      string: true,
      null: false,
      missing: true,
      array: true,
    });
    expect(await answers({ $lt: ['$v', null] })).toEqual({
      date: false,
      number: false,
      string: false,
      null: false,
      missing: true,
      array: false,
    });
    expect(await answers({ $lte: ['$v', null] })).toEqual({
      date: false,
      number: false,
      string: false,
      null: true,
      missing: true,
      array: false,
    });
    expect(await answers({ $cmp: ['$v', null] })).toEqual({ date: 1, number: 1, string: 1, null: 0, missing: -1, array: 1 });
    // Numbers < strings < arrays < dates.
    expect(await answers({ $gt: ['$v', 100] })).toEqual({
      date: true,
      number: false,
      string: true,
      null: false,
      missing: false,
      array: true,
    });
    expect(await answers({ $lt: ['$v', 'a'] })).toEqual({
      date: false,
      number: true,
      string: true,
      null: true,
      missing: true,
      array: false,
    });
  });

  it('compare arrays as whole values', async () => {
    expect(await answers({ $eq: ['$v', 10] })).toMatchObject({ array: false });
    expect(await answers({ $eq: ['$v', [1, 10]] })).toMatchObject({ array: true, number: false });
    expect(await answers({ $gt: ['$v', [1, 2]] })).toMatchObject({ array: true });
    expect(await answers({ $lt: ['$v', [2]] })).toMatchObject({ array: true });
    expect(await answers({ $cmp: ['$v', [1, 10, 0]] })).toMatchObject({ array: -1 });
  });

  it('answer the same in $expr of find and of $match, in find projections, in $cond and in a pipeline update', async () => {
    const values = t.collection('values');
    const present = ['array', 'date', 'number', 'string'];
    expect(sortedIds(await values.find({ $expr: { $gt: ['$v', null] } }).toArray())).toEqual(present);
    expect(sortedIds(await values.find({ $expr: { $eq: ['$v', null] } }).toArray())).toEqual(['null']);
    expect(sortedIds(await values.find({ $expr: { $lt: ['$v', null] } }).toArray())).toEqual(['missing']);
    expect(sortedIds(await values.aggregate([{ $match: { $expr: { $gt: ['$v', null] } } }]).toArray())).toEqual(present);
    expect(sortedIds(await values.aggregate([{ $skip: 0 }, { $match: { $expr: { $gte: ['$v', null] } } }]).toArray())).toEqual(
      [...present, 'null'].sort(),
    );
    const projected = await values.find({}, { projection: { answer: { $lt: ['$v', null] } } }).toArray();
    expect(Object.fromEntries(projected.map((doc) => [doc._id, doc.answer]))).toEqual({
      date: false,
      number: false,
      string: false,
      null: false,
      missing: true,
      array: false,
    });
    expect(await answers({ $cond: [{ $gt: ['$v', null] }, 'set', 'unset'] })).toEqual({
      date: 'set',
      number: 'set',
      string: 'set',
      null: 'unset',
      missing: 'unset',
      array: 'set',
    });
    await values.updateMany({}, [{ $set: { afterNull: { $gt: ['$v', null] } } }]);
    const updated = await values.find({}, { projection: { afterNull: 1 } }).toArray();
    expect(Object.fromEntries(updated.map((doc) => [doc._id, doc.afterNull]))).toEqual({
      date: true,
      number: true,
      string: true,
      null: false,
      missing: false,
      array: true,
    });
  });

  it('refuse a wrong number of arguments with code 16020', async () => {
    const values = t.collection('values');
    const projected = await serverError(values.aggregate([{ $project: { answer: { $gt: ['$v'] } } }]).toArray());
    expect(projected.code).toBe(16020);
    expect(projected.message).toContain('Expression $gt takes exactly 2 arguments. 1 were passed in.');
    const compared = await serverError(values.aggregate([{ $project: { answer: { $cmp: [1, 2, 3] } } }]).toArray());
    expect(compared.code).toBe(16020);
    expect(compared.message).toContain('Expression $cmp takes exactly 2 arguments. 3 were passed in.');
    const found = await serverError(values.find({ $expr: { $eq: '$v' } }).toArray());
    expect(found.code).toBe(16020);
    expect(found.message).toContain('Expression $eq takes exactly 2 arguments. 1 were passed in.');
  });
});
