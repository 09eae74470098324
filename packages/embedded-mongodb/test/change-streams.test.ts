import { type ChangeStream, type ChangeStreamDocument, type Document, MongoClient, type ResumeToken } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { type EmbeddedServer, startEmbeddedServer } from '../src/index.js';
import { type AnyDocument, connect, type Connected, serverError, servesReplicaSet } from './support/connect.js';
import { startProxy } from './support/proxy.js';

const external = process.env.MONGODB_URI;
/** Change streams need a replica set: against a standalone MONGODB_URI these tests have nothing to check. */
const replicaSet = await servesReplicaSet();

/** Short server-side waits, so that opening a stream (tryNext) costs little; each wait still ends when a change comes. */
const QUICK = { maxAwaitTimeMS: 50 } as const;

/** The next change of a stream, failing the test if none comes within `ms`. */
async function nextChange<T extends Document>(stream: ChangeStream<T>, ms = 5000): Promise<ChangeStreamDocument<T>> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no change within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([stream.next(), late]);
  } finally {
    clearTimeout(timer);
  }
}

describe.skipIf(!replicaSet)('change streams', () => {
  let t: Connected;
  /** A second client: changes from any connection reach every stream. */
  let writer: MongoClient;

  beforeAll(async () => {
    t = await connect();
    writer = await MongoClient.connect(t.database.uri);
  });
  afterAll(async () => {
    await writer?.close();
    await t?.stop();
  });

  const written = (name: string) => writer.db(t.database.dbName).collection<AnyDocument>(name);

  it('report inserts, updates, replacements and deletes from another connection, in commit order', async () => {
    const stream = t.collection('orders').watch([], QUICK);
    try {
      await stream.tryNext(); // the stream is open on the server before anything is written
      await written('orders').insertOne({ _id: 1, status: 'new', lines: [1] });
      await written('orders').updateOne({ _id: 1 }, { $set: { status: 'paid' }, $push: { lines: 2 } as Document, $unset: { missing: '' } });
      await written('orders').updateOne({ _id: 1 }, { $unset: { status: '' } });
      await written('orders').replaceOne({ _id: 1 }, { total: 3 });
      await written('orders').deleteOne({ _id: 1 });

      const insert = await nextChange(stream);
      expect(insert).toMatchObject({
        operationType: 'insert',
        fullDocument: { _id: 1, status: 'new', lines: [1] },
        ns: { db: t.database.dbName, coll: 'orders' },
        documentKey: { _id: 1 },
      });
      const update = await nextChange(stream);
      expect(update).toMatchObject({
        operationType: 'update',
        documentKey: { _id: 1 },
        updateDescription: { updatedFields: { status: 'paid', 'lines.1': 2 }, removedFields: [] },
      });
      expect((update as { fullDocument?: unknown }).fullDocument).toBeUndefined();
      const unset = await nextChange(stream);
      expect(unset).toMatchObject({ operationType: 'update', updateDescription: { updatedFields: {}, removedFields: ['status'] } });
      expect(await nextChange(stream)).toMatchObject({ operationType: 'replace', fullDocument: { _id: 1, total: 3 } });
      expect(await nextChange(stream)).toMatchObject({ operationType: 'delete', documentKey: { _id: 1 } });
      const times = [insert, update, unset].map((change) => (change as { clusterTime: { toBigInt(): bigint } }).clusterTime.toBigInt());
      expect(times[0]! < times[1]! && times[1]! < times[2]!).toBe(true);
    } finally {
      await stream.close();
    }
  });

  it("look up the current document with fullDocument: 'updateLookup' and filter with a $match after $changeStream", async () => {
    const stream = t.collection('notes').watch([{ $match: { 'fullDocument.owner': 7 } }], { ...QUICK, fullDocument: 'updateLookup' });
    try {
      await stream.tryNext();
      await written('notes').insertMany([
        { _id: 1, owner: 8, text: 'a' },
        { _id: 2, owner: 7, text: 'b' },
      ]);
      await written('notes').updateOne({ _id: 1 }, { $set: { text: 'a2' } });
      await written('notes').updateOne({ _id: 2 }, { $set: { text: 'b2' } });
      expect(await nextChange(stream)).toMatchObject({ operationType: 'insert', documentKey: { _id: 2 } });
      expect(await nextChange(stream)).toMatchObject({
        operationType: 'update',
        documentKey: { _id: 2 },
        fullDocument: { _id: 2, owner: 7, text: 'b2' },
      });
    } finally {
      await stream.close();
    }
  });

  it('show documents as they were before a change on a collection with changeStreamPreAndPostImages', async () => {
    await t.db.createCollection('imaged', { changeStreamPreAndPostImages: { enabled: true } });
    const stream = t.collection('imaged').watch([], { ...QUICK, fullDocumentBeforeChange: 'required' });
    try {
      await stream.tryNext();
      await written('imaged').insertOne({ _id: 1, v: 'first' });
      await written('imaged').updateOne({ _id: 1 }, { $set: { v: 'second' } });
      await written('imaged').deleteOne({ _id: 1 });
      expect(await nextChange(stream)).toMatchObject({ operationType: 'insert' });
      expect(await nextChange(stream)).toMatchObject({ operationType: 'update', fullDocumentBeforeChange: { _id: 1, v: 'first' } });
      expect(await nextChange(stream)).toMatchObject({ operationType: 'delete', fullDocumentBeforeChange: { _id: 1, v: 'second' } });
    } finally {
      await stream.close();
    }
  });

  it('answer a getMore that waits with the change that comes while it waits', async () => {
    const opened = await t.db.command({ aggregate: 'waiting', pipeline: [{ $changeStream: {} }], cursor: {} });
    expect(opened.cursor.firstBatch).toEqual([]);
    const waiting = t.db.command({ getMore: opened.cursor.id, collection: 'waiting', maxTimeMS: 10_000 });
    setTimeout(() => void written('waiting').insertOne({ _id: 'late' }), 50);
    const { cursor } = await waiting;
    expect(cursor.nextBatch).toMatchObject([{ operationType: 'insert', documentKey: { _id: 'late' } }]);
    await t.db.command({ killCursors: 'waiting', cursors: [opened.cursor.id] });
  });

  it('resume after a token with resumeAfter, returning the changes made while no stream was open', async () => {
    const first = t.collection('resumed').watch([], QUICK);
    let token: ResumeToken;
    try {
      await first.tryNext();
      await written('resumed').insertOne({ _id: 1 });
      await nextChange(first);
      token = first.resumeToken;
    } finally {
      await first.close();
    }
    await written('resumed').insertOne({ _id: 2 });
    await written('resumed').insertOne({ _id: 3 });
    const resumed = t.collection('resumed').watch([], { ...QUICK, resumeAfter: token });
    try {
      expect(await nextChange(resumed)).toMatchObject({ documentKey: { _id: 2 } });
      expect(await nextChange(resumed)).toMatchObject({ documentKey: { _id: 3 } });
    } finally {
      await resumed.close();
    }
  });

  it('resume from the first postBatchResumeToken after the stream opened, replaying nothing written before it', async () => {
    await written('before-open').insertOne({ _id: 'earlier' });
    await written('dropped-before-open').insertOne({ _id: 0 });
    await written('dropped-before-open').drop();
    for (const name of ['before-open', 'dropped-before-open']) {
      const first = t.collection(name).watch([], QUICK);
      let token: ResumeToken;
      try {
        expect(await first.tryNext()).toBeNull();
        token = first.resumeToken; // the postBatchResumeToken of the empty first batch
      } finally {
        await first.close();
      }
      await written(name).insertOne({ _id: 'later' });
      const resumed = t.collection(name).watch([], { ...QUICK, resumeAfter: token });
      try {
        expect(await nextChange(resumed)).toMatchObject({ operationType: 'insert', documentKey: { _id: 'later' } });
      } finally {
        await resumed.close();
      }
    }
  });

  it('invalidate a collection stream when the collection is dropped, and start again after it with startAfter', async () => {
    await written('dropped').insertOne({ _id: 0 });
    const stream = t.collection('dropped').watch([], QUICK);
    let invalidate: ResumeToken;
    try {
      await stream.tryNext();
      await written('dropped').insertOne({ _id: 1 });
      await written('dropped').drop();
      expect(await nextChange(stream)).toMatchObject({ operationType: 'insert' });
      expect(await nextChange(stream)).toMatchObject({ operationType: 'drop', ns: { coll: 'dropped' } });
      const change = await nextChange(stream);
      expect(change.operationType).toBe('invalidate');
      invalidate = change._id;
    } finally {
      await stream.close();
    }
    const refused = await serverError(
      t.db.command({ aggregate: 'dropped', pipeline: [{ $changeStream: { resumeAfter: invalidate } }], cursor: {} }),
    );
    expect(refused.code).toBe(260);
    await written('dropped').insertOne({ _id: 'again' });
    const after = t.collection('dropped').watch([], { ...QUICK, startAfter: invalidate });
    try {
      expect(await nextChange(after)).toMatchObject({ operationType: 'insert', documentKey: { _id: 'again' } });
    } finally {
      await after.close();
    }
  });

  it('watch a whole database and the whole deployment', async () => {
    const database = t.db.watch([], QUICK);
    const cluster = t.client.watch([], QUICK);
    try {
      await Promise.all([database.tryNext(), cluster.tryNext()]);
      await written('one').insertOne({ _id: 'a' });
      await written('two').insertOne({ _id: 'b' });
      expect((await nextChange(database)) as { ns: unknown }).toMatchObject({ ns: { coll: 'one' } });
      expect((await nextChange(database)) as { ns: unknown }).toMatchObject({ ns: { coll: 'two' } });
      expect((await nextChange(cluster)) as { ns: unknown }).toMatchObject({ ns: { db: t.database.dbName, coll: 'one' } });
    } finally {
      await Promise.all([database.close(), cluster.close()]);
    }
  });

  it('refuse stages that cannot follow $changeStream', async () => {
    const error = await serverError(
      t.db.command({ aggregate: 'x', pipeline: [{ $changeStream: {} }, { $group: { _id: null } }], cursor: {} }),
    );
    expect(error.code).toBeGreaterThan(0);
  });
});

/** Failures only the engine can be made to show on demand: a cut connection, and history that ran out. */
describe.skipIf(external)('change streams on the engine', () => {
  let server: EmbeddedServer;

  beforeAll(async () => {
    server = await startEmbeddedServer({ oplogSizeBytes: 64 * 1024 });
  });
  afterAll(() => server?.close());

  it('resume by themselves after the client loses its connection, missing nothing', async () => {
    const proxy = await startProxy(new URL(server.uri).host);
    const client = await MongoClient.connect(`mongodb://${proxy.address}/?directConnection=true`, { serverSelectionTimeoutMS: 5000 });
    const writer = await MongoClient.connect(server.uri);
    const stream = client.db('cut').collection<AnyDocument>('items').watch([], QUICK);
    try {
      await stream.tryNext();
      await writer.db('cut').collection<AnyDocument>('items').insertOne({ _id: 1 });
      expect(await nextChange(stream)).toMatchObject({ documentKey: { _id: 1 } });
      proxy.cut();
      await writer.db('cut').collection<AnyDocument>('items').insertOne({ _id: 2 });
      await writer.db('cut').collection<AnyDocument>('items').insertOne({ _id: 3 });
      expect(await nextChange(stream, 10_000)).toMatchObject({ documentKey: { _id: 2 } });
      expect(await nextChange(stream)).toMatchObject({ documentKey: { _id: 3 } });
    } finally {
      await stream.close();
      await client.close();
      await writer.close();
      await proxy.close();
    }
  });

  it('refuse to resume from a point the bounded history no longer holds', async () => {
    const client = await MongoClient.connect(server.uri);
    try {
      const items = client.db('lost').collection<AnyDocument>('items');
      const stream = items.watch([], QUICK);
      await stream.tryNext();
      await items.insertOne({ _id: 0 });
      const first = await nextChange(stream);
      await stream.close();
      await items.insertMany(Array.from({ length: 200 }, (_, i) => ({ _id: i + 1, padding: 'x'.repeat(1000) })));
      const error = await serverError(
        client.db('lost').command({ aggregate: 'items', pipeline: [{ $changeStream: { resumeAfter: first._id } }], cursor: {} }),
      );
      expect(error.code).toBe(286);
    } finally {
      await client.close();
    }
  });
});
