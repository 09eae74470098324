import { type Document } from 'mongodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { connect, type Connected, serverError } from './support/connect.js';

let t: Connected;

beforeAll(async () => {
  t = await connect();
});

afterAll(() => t?.stop());

const users = () => t.collection('users');
const conversations = () => t.collection('conversations');

beforeEach(async () => {
  await users()
    .drop()
    .catch(() => undefined);
  await conversations()
    .drop()
    .catch(() => undefined);
  await users().createIndex({ email: 1 }, { unique: true });
  await conversations().createIndex({ userId: 1, id: -1 }, { unique: true });
});

describe('unique indexes', () => {
  it('refuses a duplicate single-field key on insert with E11000, keyPattern and keyValue', async () => {
    await users().insertOne({ email: 'a@x.io' });
    const error = await serverError(users().insertOne({ email: 'a@x.io' }));
    expect(error.code).toBe(11000);
    expect(error.message).toBe(
      `E11000 duplicate key error collection: ${t.database.dbName}.users index: email_1 dup key: { email: "a@x.io" }`,
    );
    expect(error.keyPattern).toEqual({ email: 1 });
    expect(error.keyValue).toEqual({ email: 'a@x.io' });
    expect(await users().countDocuments()).toBe(1);
  });

  it('refuses a duplicate compound key and accepts keys that differ in one field', async () => {
    await conversations().insertMany([
      { userId: 1, id: 1 },
      { userId: 1, id: 2 },
      { userId: 2, id: 1 },
    ]);
    const error = await serverError(conversations().insertOne({ userId: 1, id: 2 }));
    expect(error.code).toBe(11000);
    expect(error.message).toContain('index: userId_1_id_-1 dup key: { userId: 1, id: 2 }');
    expect(error.keyPattern).toEqual({ userId: 1, id: -1 });
    expect(error.keyValue).toEqual({ userId: 1, id: 2 });
  });

  it('refuses a duplicate _id', async () => {
    await users().insertOne({ _id: 'same', email: 'one' });
    const error = await serverError(users().insertOne({ _id: 'same', email: 'two' }));
    expect(error.code).toBe(11000);
    expect(error.message).toContain('index: _id_ dup key: { _id: "same" }');
    expect(error.keyValue).toEqual({ _id: 'same' });
  });

  it('refuses an update that would duplicate a key and leaves the document unchanged', async () => {
    await users().insertMany([
      { _id: 1, email: 'a' },
      { _id: 2, email: 'b' },
    ]);
    const error = await serverError(users().updateOne({ _id: 2 }, { $set: { email: 'a' } }));
    expect(error.code).toBe(11000);
    expect(error.keyValue).toEqual({ email: 'a' });
    expect(await users().findOne({ _id: 2 })).toEqual({ _id: 2, email: 'b' });
    // Updating a document to its own key is not a duplicate.
    expect((await users().updateOne({ _id: 1 }, { $set: { email: 'a', n: 1 } })).modifiedCount).toBe(1);
  });

  it('refuses an upsert that would duplicate a key', async () => {
    await users().insertOne({ email: 'a', name: 'ann' });
    const error = await serverError(users().updateOne({ name: 'other' }, { $set: { email: 'a' } }, { upsert: true }));
    expect(error.code).toBe(11000);
    expect(await users().countDocuments()).toBe(1);
  });

  it('treats a missing field as null, so two documents without it collide', async () => {
    await users().insertOne({ name: 'no email' });
    const error = await serverError(users().insertOne({ name: 'no email either' }));
    expect(error.code).toBe(11000);
    expect(error.keyValue).toEqual({ email: null });
  });

  it('lets a sparse unique index skip documents without the field', async () => {
    await t.collection('sparse').createIndex({ nick: 1 }, { unique: true, sparse: true });
    await t.collection('sparse').insertMany([{ a: 1 }, { a: 2 }, { nick: 'x' }]);
    expect(await t.collection('sparse').countDocuments()).toBe(3);
    await expect(t.collection('sparse').insertOne({ nick: 'x' })).rejects.toMatchObject({ code: 11000 });
  });

  it('fails to build a unique index over duplicate data and does not create it', async () => {
    await t.collection('dups').insertMany([{ k: 1 }, { k: 1 }]);
    const error = await serverError(t.collection('dups').createIndex({ k: 1 }, { unique: true }));
    expect(error.code).toBe(11000);
    expect(error.message).toContain('E11000 duplicate key error collection');
    const names = (await t.collection('dups').listIndexes().toArray()).map((i) => i.name);
    expect(names).toEqual(['_id_']);
  });
});

describe('index management', () => {
  it('names indexes like MongoDB and lists them', async () => {
    const indexes = await conversations().listIndexes().toArray();
    expect(indexes).toEqual([
      { v: 2, key: { _id: 1 }, name: '_id_' },
      { v: 2, key: { userId: 1, id: -1 }, name: 'userId_1_id_-1', unique: true },
    ]);
  });

  it('answers numIndexesBefore/After and says when all indexes already exist', async () => {
    const first = await t.db.command({ createIndexes: 'conversations', indexes: [{ key: { name: 1 }, name: 'name_1' }] });
    expect(first).toMatchObject({ numIndexesBefore: 2, numIndexesAfter: 3, ok: 1 });
    const again = await t.db.command({ createIndexes: 'conversations', indexes: [{ key: { name: 1 }, name: 'name_1' }] });
    expect(again).toMatchObject({ numIndexesBefore: 3, numIndexesAfter: 3, note: 'all indexes already exist' });
  });

  it('creates the collection when creating an index on a new one', async () => {
    const reply = await t.db.command({ createIndexes: 'brand-new', indexes: [{ key: { a: 1 }, name: 'a_1' }] });
    expect(reply).toMatchObject({ createdCollectionAutomatically: true, numIndexesBefore: 1, numIndexesAfter: 2 });
  });

  it('refuses the same key under another name and another key under the same name', async () => {
    const sameKey = await serverError(
      t.db.command({ createIndexes: 'users', indexes: [{ key: { email: 1 }, name: 'other', unique: true }] }),
    );
    expect(sameKey.code).toBe(85);
    const sameName = await serverError(t.db.command({ createIndexes: 'users', indexes: [{ key: { other: 1 }, name: 'email_1' }] }));
    expect(sameName.code).toBe(86);
  });

  const createUserIndexes = (...indexes: Document[]) => t.db.command({ createIndexes: 'users', indexes });
  const seenAt = (name: string, expireAfterSeconds: number) => ({ key: { seenAt: 1 }, name, expireAfterSeconds });

  // As MongoDB judges them: the key, unique, sparse and partialFilterExpression tell indexes apart; a TTL only conflicts.
  it.each([
    [
      'the name of an index that is unique, for one that is not',
      86,
      'An existing index has the same name as the requested index.',
      { key: { email: 1 }, name: 'email_1' },
    ],
    [
      'the name of a TTL index, with another expireAfterSeconds',
      85,
      'An equivalent index already exists with the same name but different options.',
      seenAt('seenAt_1', 120),
    ],
    [
      'an existing index under another name',
      85,
      'Index already exists with a different name: email_1',
      { key: { email: 1 }, name: 'other', unique: true },
    ],
    [
      'a TTL index under another name and expireAfterSeconds',
      85,
      'An equivalent index already exists with a different name and options.',
      seenAt('seen', 120),
    ],
  ])('refuses a request that takes %s with code %i', async (_, code, message, spec) => {
    await createUserIndexes(seenAt('seenAt_1', 60));
    const error = await serverError(createUserIndexes(spec));
    expect(error.code).toBe(code);
    expect(error.message).toContain(message);
  });

  it('does not compare hidden: a request that differs from an index only in it changes nothing', async () => {
    const reply = await createUserIndexes({ key: { email: 1 }, name: 'email_1', unique: true, hidden: true });
    expect(reply).toMatchObject({ numIndexesBefore: 2, numIndexesAfter: 2, note: 'all indexes already exist' });
    expect((await users().listIndexes().toArray()).find((index) => index.name === 'email_1')?.hidden).toBeUndefined();
  });

  it.skipIf(process.env.MONGODB_URI)('refuses, as not supported, a second index on a key pattern that differs in unique', async () => {
    const error = await serverError(createUserIndexes({ key: { email: 1 }, name: 'email_plain' }));
    expect(error.code).toBe(67);
    expect(error.message).toContain('is not supported by the embedded engine');
    expect((await users().listIndexes().toArray()).map((index) => index.name)).toEqual(['_id_', 'email_1']);
  });

  it('drops indexes by name, by key and all at once, but never _id_', async () => {
    await users().createIndex({ a: 1 });
    await users().createIndex({ b: -1 });
    expect(await t.db.command({ dropIndexes: 'users', index: 'a_1' })).toMatchObject({ nIndexesWas: 4, ok: 1 });
    await t.db.command({ dropIndexes: 'users', index: { b: -1 } });
    expect((await users().listIndexes().toArray()).map((i) => i.name)).toEqual(['_id_', 'email_1']);
    await t.db.command({ dropIndexes: 'users', index: '*' });
    expect((await users().listIndexes().toArray()).map((i) => i.name)).toEqual(['_id_']);
    expect((await serverError(t.db.command({ dropIndexes: 'users', index: '_id_' }))).code).toBe(72);
    expect((await serverError(t.db.command({ dropIndexes: 'users', index: 'nope' }))).code).toBe(27);
  });

  it('refuses to list the indexes of a collection that does not exist', async () => {
    const error = await serverError(t.collection('never-created').listIndexes().toArray());
    expect(error.code).toBe(26);
  });

  it('keeps a non-unique index consistent through inserts, updates and deletes', async () => {
    const items = t.collection('items');
    await items.createIndex({ group: 1, rank: -1 });
    await items.insertMany(Array.from({ length: 50 }, (_, i) => ({ _id: i, group: i % 3, rank: i })));
    await items.updateMany({ group: 1 }, { $set: { group: 2 } });
    await items.deleteMany({ rank: { $lt: 10 } });
    const expected = Array.from({ length: 50 }, (_, i) => ({ _id: i, group: i % 3 === 1 ? 2 : i % 3, rank: i }))
      .filter((d) => d.rank >= 10 && d.group === 2)
      .sort((a, b) => b.rank - a.rank);
    expect(await items.find({ group: 2 }).sort({ rank: -1 }).toArray()).toEqual(expected);
    expect(await items.find({ group: 1 }).toArray()).toEqual([]);
  });

  it('indexes every element of an array field', async () => {
    const tagged = t.collection('tagged');
    await tagged.createIndex({ tags: 1 });
    await tagged.insertMany([
      { _id: 1, tags: ['a', 'b'] },
      { _id: 2, tags: ['b', 'c'] },
      { _id: 3, tags: 'c' },
    ]);
    expect((await tagged.find({ tags: 'b' }).sort({ _id: 1 }).toArray()).map((d) => d._id)).toEqual([1, 2]);
    expect(
      (
        await tagged
          .find({ tags: { $in: ['a', 'c'] } })
          .sort({ _id: 1 })
          .toArray()
      ).map((d) => d._id),
    ).toEqual([1, 2, 3]);
  });
});
