import { Binary, DBRef, Decimal128, type Document, Double, Int32, Long, ObjectId, Timestamp } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { connect, type Connected, serverError } from '../support/connect.js';

/** Query and projection behaviour that differed from MongoDB's (B4–B7, B9, B10, B12), and `$match` in a pipeline; each test passes against MongoDB too. */
let t: Connected;

beforeAll(async () => {
  t = await connect();
});
afterAll(() => t?.stop());

const sortedIds = (docs: Document[]): unknown[] => docs.map((doc) => doc._id).sort();

const ids = async (collection: string, filter: Document, options: Document = {}): Promise<unknown[]> =>
  (await t.collection(collection).find(filter, options).sort({ _id: 1 }).toArray()).map((doc) => doc._id);

/** One value of each BSON type in `v`, for `$type`. */
const TYPED_VALUES = (): Document[] => [
  { _id: 'int', v: new Int32(1) },
  { _id: 'long', v: Long.fromNumber(1) },
  { _id: 'double', v: new Double(1) },
  { _id: 'decimal', v: Decimal128.fromString('1') },
  { _id: 'objectId', v: new ObjectId() },
  { _id: 'binData', v: new Binary(Buffer.from([1])) },
  { _id: 'timestamp', v: new Timestamp({ t: 1, i: 1 }) },
  { _id: 'date', v: new Date(0) },
  { _id: 'string', v: 'x' },
  { _id: 'array', v: [new Int32(1), 'x'] },
];

describe('$type (B5)', () => {
  beforeAll(async () => {
    await t.collection('types').insertMany(TYPED_VALUES());
  });

  it('matches exactly the BSON type asked for', async () => {
    expect(await ids('types', { v: { $type: 'int' } })).toEqual(['array', 'int']);
    expect(await ids('types', { v: { $type: 'long' } })).toEqual(['long']);
    expect(await ids('types', { v: { $type: 'double' } })).toEqual(['double']);
    expect(await ids('types', { v: { $type: 'decimal' } })).toEqual(['decimal']);
    expect(await ids('types', { v: { $type: 'objectId' } })).toEqual(['objectId']);
    expect(await ids('types', { v: { $type: 'binData' } })).toEqual(['binData']);
    expect(await ids('types', { v: { $type: 'timestamp' } })).toEqual(['timestamp']);
    expect(await ids('types', { v: { $type: 16 } })).toEqual(['array', 'int']);
  });

  it("matches every numeric type with 'number', and arrays with 'array'", async () => {
    expect(await ids('types', { v: { $type: 'number' } })).toEqual(['array', 'decimal', 'double', 'int', 'long']);
    expect(await ids('types', { v: { $type: 'array' } })).toEqual(['array']);
    expect(await ids('types', { v: { $type: ['string', 'long'] } })).toEqual(['array', 'long', 'string']);
  });
});

describe('$match in a pipeline', () => {
  const types = () => t.collection('typesInPipelines');
  beforeAll(async () => {
    await types().insertMany(TYPED_VALUES());
  });

  /** The documents `{v: {$type: type}}` matches, by type: those after a stage that computes, then the number types. */
  const BY_TYPE: [string, string[]][] = [
    ['decimal', ['decimal']],
    ['objectId', ['objectId']],
    ['binData', ['binData']],
    ['timestamp', ['timestamp']],
    ['date', ['date']],
    ['string', ['array', 'string']],
    ['int', ['array', 'int']],
    ['long', ['long']],
    ['double', ['double']],
  ];

  it('tells BSON types apart with $type as find does, wherever it stands in the pipeline', async () => {
    for (const [type, expected] of BY_TYPE) {
      const match = { $match: { v: { $type: type } } };
      expect(
        sortedIds(
          await types()
            .find({ v: { $type: type } })
            .toArray(),
        ),
        type,
      ).toEqual(expected);
      expect(sortedIds(await types().aggregate([match]).toArray()), type).toEqual(expected);
      expect(
        sortedIds(
          await types()
            .aggregate([{ $skip: 0 }, match])
            .toArray(),
        ),
        type,
      ).toEqual(expected);
      expect(
        sortedIds(
          await types()
            .aggregate([{ $limit: 20 }, match])
            .toArray(),
        ),
        type,
      ).toEqual(expected);
      const [faceted] = await types()
        .aggregate([{ $facet: { matched: [match] } }])
        .toArray();
      expect(sortedIds(faceted!.matched), type).toEqual(expected);
      const [joined] = await types()
        .aggregate([{ $limit: 1 }, { $lookup: { from: 'typesInPipelines', pipeline: [match], as: 'matched' } }])
        .toArray();
      expect(sortedIds(joined!.matched), type).toEqual(expected);
      const unioned = await t
        .collection('nothing')
        .aggregate([{ $unionWith: { coll: 'typesInPipelines', pipeline: [match] } }])
        .toArray();
      expect(sortedIds(unioned), type).toEqual(expected);
    }
  });

  it('tells the types that are not numbers apart after a stage that computes', async () => {
    for (const [type, expected] of BY_TYPE.slice(0, 6)) {
      const matched = await types()
        .aggregate([{ $addFields: { seen: true } }, { $match: { v: { $type: type } } }])
        .toArray();
      expect(sortedIds(matched), type).toEqual(expected);
    }
  });

  it('passes the documents it selects on with their BSON number types', async () => {
    const selected = await types()
      .aggregate([{ $skip: 0 }, { $match: { _id: { $in: ['double', 'long'] } } }, { $limit: 2 }], { promoteValues: false })
      .toArray();
    const byId = new Map(selected.map((doc) => [doc._id, doc.v]));
    expect([...byId.keys()].sort()).toEqual(['double', 'long']);
    expect(byId.get('double')).toBeInstanceOf(Double);
    expect(byId.get('long')).toBeInstanceOf(Long);
  });

  it('refuses a filter that is not a document with code 15959', async () => {
    const error = await serverError(
      types()
        .aggregate([{ $skip: 0 }, { $match: 'int' }])
        .toArray(),
    );
    expect(error.code).toBe(15959);
    expect(error.message).toContain('the match filter must be an expression in an object');
  });

  it('reads the variables of an enclosing $lookup in $expr', async () => {
    const joined = await types()
      .aggregate([
        { $match: { _id: { $in: ['int', 'string'] } } },
        {
          $lookup: {
            from: 'typesInPipelines',
            let: { wanted: '$_id' },
            pipeline: [{ $match: { $expr: { $eq: ['$_id', '$$wanted'] } } }],
            as: 'self',
          },
        },
        { $project: { self: '$self._id' } },
        { $sort: { _id: 1 } },
      ])
      .toArray();
    expect(joined).toEqual([
      { _id: 'int', self: ['int'] },
      { _id: 'string', self: ['string'] },
    ]);
  });
});

describe('$all (B9)', () => {
  it('matches a field that is not an array when it equals every value', async () => {
    await t.collection('all').insertMany([
      { _id: 1, tag: 'a' },
      { _id: 2, tag: ['a', 'b'] },
      { _id: 3, tag: 'b' },
    ]);
    expect(await ids('all', { tag: { $all: ['a'] } })).toEqual([1, 2]);
    expect(await ids('all', { tag: { $all: ['a', 'b'] } })).toEqual([2]);
  });
});

describe('binary data (B10)', () => {
  beforeAll(async () => {
    await t.collection('bins').insertMany([
      { _id: 'long', bin: new Binary(Buffer.from([0, 0, 0]), 0) },
      { _id: 'subtype5', bin: new Binary(Buffer.from([0, 1]), 5) },
      { _id: 'small', bin: new Binary(Buffer.from([0xff, 0xff]), 0) },
      { _id: 'first', bin: new Binary(Buffer.from([0x00, 0x02]), 0) },
    ]);
  });

  it('orders binaries by length, then subtype, then bytes', async () => {
    const sorted = await t.collection('bins').find().sort({ bin: 1 }).toArray();
    expect(sorted.map((doc) => doc._id)).toEqual(['first', 'small', 'subtype5', 'long']);
  });

  it('matches binaries by equality and $in, and bit tests on binary data', async () => {
    expect(await ids('bins', { bin: new Binary(Buffer.from([0xff, 0xff]), 0) })).toEqual(['small']);
    expect(await ids('bins', { bin: { $in: [new Binary(Buffer.from([0, 1]), 5)] } })).toEqual(['subtype5']);
    expect(await ids('bins', { bin: { $bitsAllSet: [1, 15] } })).toEqual(['small']);
    expect(await ids('bins', { bin: { $bitsAnySet: new Binary(Buffer.from([0x02])) } })).toEqual(['small']);
    expect(await ids('bins', { bin: { $bitsAllClear: [0, 1, 2, 3] } })).toEqual(['first', 'long', 'subtype5']);
  });
});

describe('let variables (B7)', () => {
  beforeAll(async () => {
    await t.collection('vars').insertMany([
      { _id: 1, n: 1 },
      { _id: 2, n: 2 },
      { _id: 3, n: 3 },
    ]);
  });

  it('are visible to $expr in find and aggregate', async () => {
    expect(await ids('vars', { $expr: { $gte: ['$n', '$$least'] } }, { let: { least: 2 } })).toEqual([2, 3]);
    const aggregated = await t
      .collection('vars')
      .aggregate([{ $match: { $expr: { $eq: ['$n', '$$wanted'] } } }, { $project: { doubled: { $multiply: ['$n', '$$factor'] } } }], {
        let: { wanted: 3, factor: 2 },
      })
      .toArray();
    expect(aggregated).toEqual([{ _id: 3, doubled: 6 }]);
  });

  it('are visible to updates and deletes', async () => {
    const vars = t.collection('vars');
    await vars.updateMany({ $expr: { $lt: ['$n', '$$limit'] } }, [{ $set: { tag: '$$label' } }], { let: { limit: 3, label: 'low' } });
    expect(await ids('vars', { tag: 'low' })).toEqual([1, 2]);
    await vars.deleteMany({ $expr: { $eq: ['$n', '$$gone'] } }, { let: { gone: 1 } });
    expect(await ids('vars', {})).toEqual([2, 3]);
  });
});

describe('DBRef fields (B12)', () => {
  it('are queried by their $ref, $id and $db parts, also inside $elemMatch', async () => {
    const target = new ObjectId();
    await t.collection('refs').insertMany([
      { _id: 1, owner: new DBRef('users', target), members: [new DBRef('users', target, 'app')] },
      { _id: 2, owner: new DBRef('users', new ObjectId()), members: [] },
    ]);
    expect(await ids('refs', { 'owner.$id': target })).toEqual([1]);
    expect(await ids('refs', { owner: new DBRef('users', target) })).toEqual([1]);
    expect(await ids('refs', { members: { $elemMatch: { $id: target, $db: 'app' } } })).toEqual([1]);
  });
});

describe('projections (B4, B6)', () => {
  beforeAll(async () => {
    await t.collection('shapes').insertOne({ _id: 1, name: 'n', list: [1, 5, 9, 12], items: [{ k: 1 }, { k: 7 }], secret: 's' });
  });

  it('keeps every other field when the projection has only $slice, and combines it with exclusions', async () => {
    const sliced = await t.collection('shapes').findOne({ _id: 1 }, { projection: { list: { $slice: 2 } } });
    expect(sliced).toEqual({ _id: 1, name: 'n', list: [1, 5], items: [{ k: 1 }, { k: 7 }], secret: 's' });
    const excluded = await t.collection('shapes').findOne({ _id: 1 }, { projection: { list: { $slice: [-2, 1] }, secret: 0 } });
    expect(excluded).toEqual({ _id: 1, name: 'n', list: [9], items: [{ k: 1 }, { k: 7 }] });
    const included = await t.collection('shapes').findOne({ _id: 1 }, { projection: { list: { $slice: -1 }, name: 1 } });
    expect(included).toEqual({ _id: 1, name: 'n', list: [12] });
  });

  it('returns the first element $elemMatch selects, also with an operator-only condition on scalars', async () => {
    const scalar = await t.collection('shapes').findOne({ _id: 1 }, { projection: { list: { $elemMatch: { $gt: 6, $in: [9, 12] } } } });
    expect(scalar).toEqual({ _id: 1, list: [9] });
    const documents = await t.collection('shapes').findOne({ _id: 1 }, { projection: { items: { $elemMatch: { k: { $gt: 2 } } } } });
    expect(documents).toEqual({ _id: 1, items: [{ k: 7 }] });
  });

  it('applies a nested projection document like its dotted form', async () => {
    await t.collection('shapes').insertOne({ _id: 2, account: { amount: 25, owner: 'o' } });
    expect(await t.collection('shapes').findOne({ _id: 2 }, { projection: { account: { amount: 1 } } })).toEqual({
      _id: 2,
      account: { amount: 25 },
    });
  });

  it('filters arrays with $elemMatch and operator-only conditions in queries', async () => {
    expect(await ids('shapes', { list: { $elemMatch: { $gte: 10, $lt: 13 } } })).toEqual([1]);
    expect(await ids('shapes', { list: { $elemMatch: { $in: [100] } } })).toEqual([]);
  });
});
