import { Binary, Decimal128, Double, Int32, Long, ObjectId, Timestamp, UUID } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { connect, type Connected } from './support/connect.js';

let t: Connected;

beforeAll(async () => {
  t = await connect();
});

afterAll(() => t?.stop());

const typed = { promoteValues: false, promoteLongs: false } as const;

function sample() {
  return {
    _id: new ObjectId(),
    date: new Date('2024-05-06T07:08:09.010Z'),
    int32: new Int32(42),
    int64: Long.fromString('9007199254740993'),
    smallLong: Long.fromNumber(7),
    double: new Double(3),
    fraction: new Double(2.5),
    decimal: Decimal128.fromString('1234.5678901234567890'),
    binary: new Binary(Buffer.from([0, 1, 2, 255])),
    uuid: new UUID('0f8fad5b-d9cb-469f-a165-70867728950e'),
    timestamp: new Timestamp({ t: 1700000000, i: 3 }),
    nothing: null,
    nested: { deeper: { list: [new Int32(1), 'two', { three: new Int32(3) }], flag: true } },
    emptyList: [],
    text: 'héllo ✓',
  };
}

describe('BSON types', () => {
  it('round-trips every type exactly', async () => {
    const doc = sample();
    await t.collection('types').insertOne(doc);
    const back = await t.collection('types').findOne({ _id: doc._id }, typed);
    expect(back).toEqual(doc);
    expect(back!.int32).toBeInstanceOf(Int32);
    expect(back!.double).toBeInstanceOf(Double);
    expect(back!.smallLong).toBeInstanceOf(Long);
    expect(back!.int64.toString()).toBe('9007199254740993');
  });

  it('keeps the types of untouched fields through an update', async () => {
    const doc = sample();
    await t.collection('types').insertOne(doc);
    await t.collection('types').updateOne({ _id: doc._id }, { $set: { text: 'changed' } });
    const back = await t.collection('types').findOne({ _id: doc._id }, typed);
    expect(back).toEqual({ ...doc, text: 'changed' });
  });

  it('keeps the numeric type of an incremented field', async () => {
    const _id = new ObjectId();
    await t.collection('types').insertOne({ _id, d: new Double(1), l: Long.fromNumber(1), i: new Int32(1) });
    await t.collection('types').updateOne({ _id }, { $inc: { d: 1, l: 1, i: 1 } });
    const back = await t.collection('types').findOne({ _id }, typed);
    expect(back!.d).toEqual(new Double(2));
    expect(back!.l).toEqual(Long.fromNumber(2));
    expect(back!.i).toEqual(new Int32(2));
  });

  it('stores the BSON type a $set sends', async () => {
    const _id = new ObjectId();
    await t.collection('types').insertOne({ _id, v: new Double(1.5) });
    await t.collection('types').updateOne({ _id }, { $set: { v: Long.fromNumber(5), w: new Double(4) } });
    const back = await t.collection('types').findOne({ _id }, typed);
    expect(back!.v).toEqual(Long.fromNumber(5));
    expect(back!.w).toEqual(new Double(4));
  });

  it('matches numbers across int32, int64 and double', async () => {
    await t.collection('numbers').insertMany([
      { _id: 'int', v: new Int32(5) },
      { _id: 'long', v: Long.fromNumber(5) },
      { _id: 'double', v: new Double(5) },
      { _id: 'other', v: 5.5 },
    ]);
    const ids = (await t.collection('numbers').find({ v: 5 }).sort({ _id: 1 }).toArray()).map((d) => d._id);
    expect(ids).toEqual(['double', 'int', 'long']);
    const gt = (
      await t
        .collection('numbers')
        .find({ v: { $gt: Long.fromNumber(5) } })
        .toArray()
    ).map((d) => d._id);
    expect(gt).toEqual(['other']);
  });

  it('finds by ObjectId, Date and binary values', async () => {
    const doc = sample();
    await t.collection('lookups').insertOne(doc);
    expect(await t.collection('lookups').countDocuments({ _id: new ObjectId(doc._id.toHexString()) })).toBe(1);
    expect(await t.collection('lookups').countDocuments({ date: new Date(doc.date.getTime()) })).toBe(1);
    expect(await t.collection('lookups').countDocuments({ date: { $gt: new Date(0) } })).toBe(1);
    expect(await t.collection('lookups').countDocuments({ uuid: new UUID(doc.uuid.toHexString()) })).toBe(1);
  });
});
