import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { type Document, MongoClient, MongoServerError } from 'mongodb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { DataDirectoryError, type EmbeddedServer, type EmbeddedServerOptions, startEmbeddedServer } from '../src/index.js';

let directory: string;
const open: { server: EmbeddedServer; client: MongoClient }[] = [];

beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'embedded-data-'));
});

afterEach(async () => {
  for (const { server, client } of open.splice(0)) {
    await client.close();
    await server.close();
  }
  await rm(directory, { recursive: true, force: true });
});

async function start(options: EmbeddedServerOptions = {}): Promise<{ server: EmbeddedServer; client: MongoClient }> {
  const server = await startEmbeddedServer({ dataDir: directory, ...options });
  const client = await MongoClient.connect(server.uri);
  const pair = { server, client };
  open.push(pair);
  return pair;
}

async function stop(pair: { server: EmbeddedServer; client: MongoClient }): Promise<void> {
  open.splice(open.indexOf(pair), 1);
  await pair.client.close();
  await pair.server.close();
}

describe('a data directory', () => {
  it('keeps documents, collection options and indexes across a restart, and says whether it was new', async () => {
    const first = await start();
    expect(first.server.startedEmpty).toBe(true);
    const db = first.client.db('app');
    await db.createCollection('people', { validator: { age: { $gte: 0 } } });
    const people = db.collection<Document>('people');
    await people.createIndex({ email: 1 }, { unique: true, name: 'email_1' });
    await people.insertMany([
      { _id: 1 as never, email: 'a@x', age: 30 },
      { _id: 2 as never, email: 'b@x', age: 40 },
      { _id: 3 as never, email: 'c@x', age: 50 },
    ]);
    await people.updateOne({ _id: 2 as never }, { $set: { age: 41 } });
    await people.deleteOne({ _id: 3 as never });
    await db.collection('old').insertOne({ _id: 1 as never });
    await db.collection('old').rename('renamed');
    await db.collection('gone').insertOne({ _id: 1 as never });
    await db.collection('gone').drop();
    await stop(first);

    const second = await start();
    expect(second.server.startedEmpty).toBe(false);
    const again = second.client.db('app');
    expect(await again.collection('people').find().sort({ _id: 1 }).toArray()).toEqual([
      { _id: 1, email: 'a@x', age: 30 },
      { _id: 2, email: 'b@x', age: 41 },
    ]);
    expect((await again.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name).sort()).toEqual(['people', 'renamed']);
    expect((await again.collection('people').indexes()).map((index) => [index.name, index.unique ?? false])).toEqual([
      ['_id_', false],
      ['email_1', true],
    ]);
    // The unique index and the validator hold as before, and the plan uses the index.
    await expect(again.collection('people').insertOne({ _id: 4 as never, email: 'a@x', age: 1 })).rejects.toMatchObject({ code: 11000 });
    await expect(again.collection('people').insertOne({ _id: 5 as never, email: 'e@x', age: -1 })).rejects.toMatchObject({ code: 121 });
    const plan = await again.collection('people').find({ email: 'b@x' }).explain();
    expect(JSON.stringify(plan.queryPlanner.winningPlan)).toContain('email_1');
    // New documents go after the restored ones.
    await again.collection('people').insertOne({ _id: 6 as never, email: 'f@x', age: 2 });
    expect((await again.collection('people').find().toArray()).map((doc) => doc._id)).toEqual([1, 2, 6]);
  });

  it('is refused to a second server while one has it open, with one line naming the lock', async () => {
    const first = await start();
    const refusal = await startEmbeddedServer({ dataDir: directory }).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(DataDirectoryError);
    expect((refusal as Error).message).toMatch(
      new RegExp(`^data directory ${directory} is in use by process ${process.pid} \\(lock .*engine.lock\\)`),
    );
    expect((refusal as Error).message).not.toContain('\n');
    await stop(first);
    const second = await start();
    expect(second.server.startedEmpty).toBe(true);
  });

  it('that cannot be used stops the start with one line', async () => {
    const file = join(directory, 'a-file');
    await writeFile(file, 'not a directory');
    const refusal = await startEmbeddedServer({ dataDir: file }).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(DataDirectoryError);
    expect((refusal as Error).message).toMatch(/^data directory .*a-file cannot be created: /);
    expect((refusal as Error).message).not.toContain('\n');
  });

  it('accepts journaled writes (j: true), which memory refuses', async () => {
    const { client } = await start();
    await client
      .db('app')
      .collection('j')
      .insertOne({ _id: 1 as never }, { writeConcern: { w: 1, j: true } });
    const memory = await startEmbeddedServer();
    const other = await MongoClient.connect(memory.uri);
    try {
      await expect(
        other
          .db('app')
          .collection('j')
          .insertOne({ _id: 1 as never }, { writeConcern: { j: true } }),
      ).rejects.toBeInstanceOf(MongoServerError);
    } finally {
      await other.close();
      await memory.close();
    }
  });

  it('keeps the change history: a resume token from before a restart resumes with every later event', async () => {
    const first = await start();
    const items = first.client.db('app').collection<Document>('items');
    await items.insertOne({ _id: 1 as never });
    const stream = items.watch();
    await stream.tryNext();
    await items.insertOne({ _id: 2 as never });
    const seen = await stream.next();
    const token = seen._id;
    await items.updateOne({ _id: 2 as never }, { $set: { x: 1 } });
    await items.deleteOne({ _id: 1 as never });
    await stream.close();
    await stop(first);

    const second = await start();
    const later = second.client.db('app').collection<Document>('items');
    await later.insertOne({ _id: 3 as never });
    const resumed = later.watch([], { resumeAfter: token });
    const events: Document[] = [];
    for (let i = 0; i < 3; i++) events.push(await resumed.next());
    await resumed.close();
    expect(events.map((event) => [event.operationType, event.documentKey?._id])).toEqual([
      ['update', 2],
      ['delete', 1],
      ['insert', 3],
    ]);
  });

  it('answers 286 ChangeStreamHistoryLost for a resume token older than the kept history, after a restart', async () => {
    const first = await start({ oplogSizeBytes: 4096 });
    const items = first.client.db('app').collection<Document>('items');
    const stream = items.watch();
    await stream.tryNext();
    await items.insertOne({ _id: 0 as never });
    const token = (await stream.next())._id;
    await stream.close();
    for (let i = 1; i <= 40; i++) await items.insertOne({ _id: i as never, padding: 'x'.repeat(200) });
    await stop(first);

    const second = await start({ oplogSizeBytes: 4096 });
    const resumed = second.client.db('app').collection('items').watch([], { resumeAfter: token });
    await expect(resumed.next()).rejects.toMatchObject({ code: 286 });
    await resumed.close();
  });
});
