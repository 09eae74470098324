import mongoose, { type Connection, Schema } from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startTestDatabase, type TestDatabase } from './support/connect.js';

let database: TestDatabase;
let connection: Connection;

const conversationSchema = new Schema(
  {
    userId: { type: Number, required: true },
    id: { type: Number, required: true },
    name: { type: String, default: '' },
    messages: [{ _id: false, role: String, content: String }],
    model: String,
    enableWeb: { type: Boolean, default: false },
  },
  { versionKey: false },
);
conversationSchema.index({ userId: 1, id: -1 }, { unique: true });

const userSchema = new Schema({ id: { type: Number, unique: true }, username: String, quota: Number }, { versionKey: false });

beforeAll(async () => {
  database = await startTestDatabase();
  connection = await mongoose.createConnection(database.uri, { dbName: database.dbName, autoIndex: true, autoCreate: true }).asPromise();
});

afterAll(async () => {
  await connection?.close();
  await database?.stop();
});

describe('Mongoose 9 over the engine', () => {
  it('creates the collection and the schema indexes on init', async () => {
    const Conversation = connection.model('Conversation', conversationSchema);
    await Conversation.init();
    const indexes = await Conversation.listIndexes();
    expect(indexes.map((i) => i.name)).toEqual(['_id_', 'userId_1_id_-1']);
    expect(indexes[1]).toMatchObject({ key: { userId: 1, id: -1 }, unique: true });
  });

  it('does model CRUD', async () => {
    const Conversation = connection.model('Conversation', conversationSchema);
    const created = await Conversation.create({
      userId: 1,
      id: 1,
      name: 'Trip',
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'hi' }],
    });
    const found = await Conversation.findOne({ userId: 1, id: 1 }).lean();
    expect(found).toMatchObject({ _id: created._id, name: 'Trip', enableWeb: false, messages: [{ role: 'user', content: 'hi' }] });
    await Conversation.updateOne(
      { _id: created._id },
      { $set: { name: 'Trip to Rome' }, $push: { messages: { role: 'assistant', content: 'ok' } } },
    );
    const doc = await Conversation.findById(created._id);
    expect(doc!.name).toBe('Trip to Rome');
    expect(doc!.messages).toHaveLength(2);
    doc!.enableWeb = true;
    await doc!.save();
    expect((await Conversation.findById(created._id).lean())!.enableWeb).toBe(true);
    expect((await Conversation.deleteOne({ _id: created._id })).deletedCount).toBe(1);
    expect(await Conversation.countDocuments({ userId: 1 })).toBe(0);
  });

  it('reports a duplicate of the unique compound index as E11000', async () => {
    const Conversation = connection.model('Conversation', conversationSchema);
    await Conversation.create({ userId: 2, id: 1 });
    await expect(Conversation.create({ userId: 2, id: 1 })).rejects.toMatchObject({
      code: 11000,
      keyPattern: { userId: 1, id: -1 },
      keyValue: { userId: 2, id: 1 },
    });
  });

  it('reads the newest 100 conversations of a user with a projection', async () => {
    const Conversation = connection.model('Conversation', conversationSchema);
    await Conversation.insertMany(
      Array.from({ length: 150 }, (_, i) => ({ userId: 3, id: i + 1, name: `c${i + 1}`, messages: [{ role: 'user', content: 'x' }] })),
    );
    const page = await Conversation.find({ userId: 3 }, { messages: 0 }).sort({ id: -1 }).limit(100).lean();
    expect(page).toHaveLength(100);
    expect(page[0]).toMatchObject({ id: 150, name: 'c150' });
    expect(page[0]).not.toHaveProperty('messages');
    expect(page[99]!.id).toBe(51);
  });

  it('upserts with findOneAndUpdate and increments atomically', async () => {
    const User = connection.model('User', userSchema);
    await User.init();
    const created = await User.findOneAndUpdate(
      { id: 7 },
      { $setOnInsert: { username: 'gus' }, $set: { quota: 10 } },
      { upsert: true, returnDocument: 'after' },
    );
    expect(created).toMatchObject({ id: 7, username: 'gus', quota: 10 });
    const incremented = await User.findOneAndUpdate(
      { id: 7, quota: { $gte: 4 } },
      { $inc: { quota: -4 } },
      { returnDocument: 'after' },
    ).lean();
    expect(incremented!.quota).toBe(6);
    const refused = await User.findOneAndUpdate({ id: 7, quota: { $gte: 100 } }, { $inc: { quota: -100 } }, { returnDocument: 'after' });
    expect(refused).toBeNull();
  });

  it('syncs indexes: drops those the schema no longer has and builds new ones', async () => {
    const first = new Schema({ a: Number, b: Number }, { autoIndex: false });
    first.index({ a: 1 });
    const First = connection.model('Synced', first, 'synced');
    await First.syncIndexes();
    expect((await First.listIndexes()).map((i) => i.name)).toEqual(['_id_', 'a_1']);
    connection.deleteModel('Synced');
    const second = new Schema({ a: Number, b: Number }, { autoIndex: false });
    second.index({ b: -1 }, { unique: true });
    const Second = connection.model('Synced', second, 'synced');
    const dropped = await Second.syncIndexes();
    expect(dropped).toEqual(['a_1']);
    expect((await Second.listIndexes()).map((i) => i.name)).toEqual(['_id_', 'b_-1']);
  });

  it('runs bulkWrite and aggregate', async () => {
    const Conversation = connection.model('Conversation', conversationSchema);
    await Conversation.bulkWrite([
      { insertOne: { document: { userId: 4, id: 1, name: 'one' } } },
      { insertOne: { document: { userId: 4, id: 2, name: 'two' } } },
      { updateOne: { filter: { userId: 4, id: 1 }, update: { $set: { name: 'uno' } } } },
      { deleteOne: { filter: { userId: 4, id: 2 } } },
    ]);
    const names = await Conversation.aggregate<{ _id: number; names: string[] }>([
      { $match: { userId: 4 } },
      { $group: { _id: '$userId', names: { $push: '$name' } } },
    ]);
    expect(names).toEqual([{ _id: 4, names: ['uno'] }]);
  });
});
