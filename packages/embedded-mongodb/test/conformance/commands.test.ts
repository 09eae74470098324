import { type Document } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { connect, type Connected, serverError } from '../support/connect.js';

/** Command behaviour that differed from MongoDB's (B13, B15, B17, B18, B20) and options that were ignored; each test passes against MongoDB too. */
let t: Connected;

beforeAll(async () => {
  t = await connect();
  await t.collection('people').insertMany([
    { _id: 1, name: 'Betty', age: 30 },
    { _id: 2, name: 'Andrew', age: 40 },
  ]);
  await t.collection('people').createIndex({ name: 1 });
});
afterAll(() => t?.stop());

describe('aggregate (B13, B18)', () => {
  it('honours hint, and refuses a hint naming no index', async () => {
    const hinted = await t
      .collection('people')
      .aggregate([{ $match: { age: { $gt: 0 } } }], { hint: { name: 1 } })
      .toArray();
    expect(hinted.map((doc) => doc.name)).toEqual(['Andrew', 'Betty']);
    const error = await serverError(
      t
        .collection('people')
        .aggregate([{ $match: {} }], { hint: { nothing: 1 } })
        .toArray(),
    );
    expect(error.code).toBe(2);
  });

  it('refuses an unknown stage with code 40324', async () => {
    const error = await serverError(
      t
        .collection('people')
        .aggregate([{ $fakeStage: {} }])
        .toArray(),
    );
    expect(error.code).toBe(40324);
    expect(error.message).toBe("Unrecognized pipeline stage name: '$fakeStage'");
  });

  it('writes its results with $out, replacing the target', async () => {
    await t.collection('adults').insertOne({ _id: 99, stale: true });
    await t
      .collection('people')
      .aggregate([{ $match: { age: { $gte: 35 } } }, { $out: 'adults' }])
      .toArray();
    expect(await t.collection('adults').find().toArray()).toEqual([{ _id: 2, name: 'Andrew', age: 40 }]);
  });

  it('explains an aggregation', async () => {
    const plan = await t
      .collection('people')
      .aggregate([{ $match: { name: 'Betty' } }])
      .explain('queryPlanner');
    expect(plan.ok).toBe(1);
  });
});

describe('explain (B20)', () => {
  it('refuses an invalid verbosity', async () => {
    const error = await serverError(t.db.command({ explain: { find: 'people', filter: {} }, verbosity: 'everything' }));
    expect([2, 9]).toContain(error.code);
  });
});

describe('write concern (B15)', () => {
  it('refuses w: 2 on a standalone, and reports it unsatisfiable on a single-member set', async () => {
    const hello = await t.db.admin().command({ hello: 1 });
    const collection = t.collection('concern');
    if (hello.setName === undefined) {
      const error = await serverError(collection.insertOne({ a: 1 }, { writeConcern: { w: 2 } }));
      expect(error.code).toBe(2);
      expect(await collection.countDocuments()).toBe(0);
      return;
    }
    if ((hello.hosts as unknown[]).length > 1) return;
    // Applied, then reported: the driver raises the write concern error.
    const error = await serverError(collection.insertOne({ a: 1 }, { writeConcern: { w: 2, wtimeout: 1000 } }));
    expect(error.code).toBe(100);
    expect(await collection.countDocuments()).toBe(1);
  });
});

describe('create (B17)', () => {
  it('refuses a capped collection without a size with InvalidOptions', async () => {
    const error = await serverError(t.db.command({ create: 'capped_no_size', capped: true }));
    expect(error.code).toBe(72);
    expect((await t.db.listCollections({ name: 'capped_no_size' }).toArray()).length).toBe(0);
  });

  it('refuses an unknown option instead of ignoring it', async () => {
    const error = await serverError(t.db.command({ create: 'odd', flavour: 'vanilla' }));
    expect(error.code).toBe(40415);
  });
});

describe('capped collections and tailable cursors', () => {
  it('drop their oldest documents beyond max', async () => {
    await t.db.createCollection('log', { capped: true, size: 4096, max: 3 });
    await t.collection('log').insertMany([1, 2, 3, 4, 5].map((n) => ({ _id: n })));
    expect((await t.collection('log').find().toArray()).map((doc) => doc._id)).toEqual([3, 4, 5]);
  });

  it('tail a capped collection, returning documents inserted after the cursor opened', async () => {
    await t.db.createCollection('tail', { capped: true, size: 4096 });
    await t.collection('tail').insertOne({ _id: 1 });
    const first = await t.db.command({ find: 'tail', filter: {}, tailable: true, batchSize: 10 });
    expect(first.cursor.firstBatch).toEqual([{ _id: 1 }]);
    await t.collection('tail').insertOne({ _id: 2 });
    const next = await t.db.command({ getMore: first.cursor.id, collection: 'tail' });
    expect(next.cursor.nextBatch).toEqual([{ _id: 2 }]);
    await t.db.command({ killCursors: 'tail', cursors: [first.cursor.id] });
  });

  it('refuse a tailable cursor on a collection that is not capped', async () => {
    const error = await serverError(t.db.command({ find: 'people', filter: {}, tailable: true }));
    expect(error.code).toBe(2);
  });
});

describe('validators', () => {
  it('refuse a document failing a query validator or $jsonSchema, and let bypassDocumentValidation through', async () => {
    await t.db.createCollection('checked', {
      validator: {
        $and: [
          { age: { $gte: 0 } },
          { $jsonSchema: { bsonType: 'object', required: ['name'], properties: { name: { bsonType: 'string', minLength: 1 } } } },
        ],
      },
    });
    const checked = t.collection('checked');
    await checked.insertOne({ name: 'ok', age: 3 });
    expect((await serverError(checked.insertOne({ name: 'x', age: -1 }))).code).toBe(121);
    expect((await serverError(checked.insertOne({ age: 1 }))).code).toBe(121);
    expect((await serverError(checked.updateOne({ name: 'ok' }, { $set: { name: '' } }))).code).toBe(121);
    await checked.insertOne({ age: -5 } as Document, { bypassDocumentValidation: true });
    expect(await checked.countDocuments()).toBe(2);
  });

  it("with validationAction 'warn' accept the document", async () => {
    await t.db.createCollection('warned', { validator: { n: { $type: 'int' } }, validationAction: 'warn' });
    await t.collection('warned').insertOne({ n: 'not a number' });
    expect(await t.collection('warned').countDocuments()).toBe(1);
  });
});

describe('indexes', () => {
  it('refuse an unknown index option', async () => {
    const error = await serverError(t.db.command({ createIndexes: 'people', indexes: [{ key: { age: 1 }, name: 'age_1', flavour: 1 }] }));
    expect(error.code).toBe(197);
  });

  it('hide an index from the planner with collMod, so that a hint to it is refused', async () => {
    await t.collection('people').createIndex({ age: 1 });
    await t.db.command({ collMod: 'people', index: { keyPattern: { age: 1 }, hidden: true } });
    const listed = await t.collection('people').listIndexes().toArray();
    expect(listed.find((index) => index.name === 'age_1')).toMatchObject({ hidden: true });
    expect((await serverError(t.collection('people').find({}).hint({ age: 1 }).toArray())).code).toBe(2);
  });
});

describe("$out under a 'linearizable' read concern (B1)", () => {
  it('is refused with 72 and writes nothing', async () => {
    const error = await serverError(
      t.db.command({
        aggregate: 'people',
        pipeline: [{ $match: {} }, { $out: 'linearizable_out' }],
        cursor: {},
        readConcern: { level: 'linearizable' },
      }),
    );
    expect(error).toMatchObject({ code: 72, message: "$out cannot be used with a 'linearizable' read concern level" });
    expect(await t.db.listCollections({ name: 'linearizable_out' }).toArray()).toEqual([]);
  });
});

describe('the Stable API parameters (B3)', () => {
  const ping = (fields: Document) => t.db.command({ ping: 1, ...fields });

  it('refuses apiStrict: true with a command that is not in API version 1 (323), and runs one that is', async () => {
    const error = await serverError(t.db.command({ distinct: 'people', key: 'name', apiVersion: '1', apiStrict: true }));
    expect(error).toMatchObject({ code: 323, codeName: 'APIStrictError' });
    expect(error.message).toContain('Provided apiStrict:true, but the command distinct is not in API Version 1');
    expect(await t.db.command({ find: 'people', filter: { _id: 1 }, apiVersion: '1', apiStrict: true })).toMatchObject({ ok: 1 });
  });

  it('refuses an API version other than "1" (322), apiStrict or apiDeprecationErrors without one (4886600), one that is no string (14)', async () => {
    expect(await serverError(ping({ apiVersion: 'server_will_never_support_this_api_version' }))).toMatchObject({
      code: 322,
      message: 'API version must be "1"',
    });
    expect(await serverError(ping({ apiStrict: true }))).toMatchObject({
      code: 4886600,
      message: 'Provided apiStrict and/or apiDeprecationErrors without passing apiVersion',
    });
    expect((await serverError(ping({ apiDeprecationErrors: false }))).code).toBe(4886600);
    expect((await serverError(ping({ apiVersion: 1 }))).code).toBe(14);
    expect(await ping({ apiVersion: '1', apiStrict: false, apiDeprecationErrors: true })).toMatchObject({ ok: 1 });
  });
});
