import { type CommandStartedEvent, type Document, Long, MongoClient } from 'mongodb';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { startEmbeddedServer } from '../src/index.js';
import { type AnyDocument, connect, type Connected, serverError } from './support/connect.js';

/** The test commands are the engine's to enable: against a MONGODB_URI these tests have nothing to check. */
const external = process.env.MONGODB_URI !== undefined;

describe.skipIf(external)('configureFailPoint without test commands', () => {
  it('does not exist, as on a mongod started without enableTestCommands', async () => {
    const t = await connect();
    try {
      const error = await serverError(t.client.db('admin').command({ configureFailPoint: 'failCommand', mode: 'alwaysOn' }));
      expect(error).toMatchObject({ code: 59, codeName: 'CommandNotFound', message: "no such command: 'configureFailPoint'" });
    } finally {
      await t.stop();
    }
  });
});

describe.skipIf(external)('the failCommand fail point', () => {
  let t: Connected;
  /** A client with its own application name, to show that a fail point aimed at another one leaves it alone. */
  let other: MongoClient;
  const started: CommandStartedEvent[] = [];

  beforeAll(async () => {
    t = await connect({ appName: 'gateway', monitorCommands: true }, { enableTestCommands: true });
    t.client.on('commandStarted', (event) => started.push(event));
    other = await MongoClient.connect(t.database.uri, { appName: 'other' });
  });
  afterAll(async () => {
    await other?.close();
    await t?.stop();
  });
  afterEach(async () => {
    await configure('off');
    started.length = 0;
  });

  const admin = () => t.client.db('admin');
  const configure = (mode: unknown, data?: Document) =>
    admin().command({ configureFailPoint: 'failCommand', mode, ...(data ? { data } : {}) });
  const sent = (name: string) => started.filter((event) => event.commandName === name).length;

  it('alwaysOn fails every listed command (by any of its names) before it runs, until turned off', async () => {
    expect(await configure('alwaysOn', { failCommands: ['insert', 'findandmodify'], errorCode: 2 })).toMatchObject({ ok: 1 });
    for (let i = 0; i < 2; i++) {
      const error = await serverError(t.collection('always').insertOne({ _id: i }));
      expect(error).toMatchObject({ code: 2, codeName: 'BadValue', message: "Failing command via 'failCommand' failpoint" });
    }
    expect((await serverError(t.collection('always').findOneAndUpdate({}, { $set: { a: 1 } }))).code).toBe(2);
    expect(await t.collection('always').countDocuments()).toBe(0);
    const { count } = await configure('off');
    expect(count).toBeGreaterThanOrEqual(3);
    await t.collection('always').insertOne({ _id: 'after' });
    expect(await t.collection('always').countDocuments()).toBe(1);
  });

  it('{times: n} fails the next n matching commands only; others do not count', async () => {
    await configure({ times: 2 }, { failCommands: ['insert'], errorCode: 11000 });
    await t.collection('times').find().toArray(); // not listed: neither fails nor counts
    expect((await serverError(t.collection('times').insertOne({ _id: 1 }))).code).toBe(11000);
    expect((await serverError(t.collection('times').insertOne({ _id: 2 }))).code).toBe(11000);
    await t.collection('times').insertOne({ _id: 3 });
    expect(await t.collection('times').find().toArray()).toEqual([{ _id: 3 }]);
  });

  it('{skip: n} lets n matching commands through, then fails every one', async () => {
    await configure({ skip: 2 }, { failCommands: ['count'], errorCode: 2 });
    await t.collection('skip').estimatedDocumentCount();
    await t.collection('skip').estimatedDocumentCount();
    for (let i = 0; i < 2; i++) expect((await serverError(t.collection('skip').estimatedDocumentCount())).code).toBe(2);
  });

  it('{activationProbability: p} fires with that probability (never at 0, always at 1) and refuses one outside [0, 1]', async () => {
    await configure({ activationProbability: 0 }, { failCommands: ['find'], errorCode: 2 });
    for (let i = 0; i < 5; i++) await t.collection('random').findOne();
    await configure({ activationProbability: 1 }, { failCommands: ['find'], errorCode: 2 });
    for (let i = 0; i < 5; i++) expect((await serverError(t.collection('random').findOne())).code).toBe(2);
    expect(await serverError(configure({ activationProbability: 1.5 }))).toMatchObject({
      code: 2,
      message: 'activationProbability must be between 0.0 and 1.0; found 1.5',
    });
  });

  it('refuses a missing or unknown mode and a fail point it does not have, as mongod', async () => {
    expect((await serverError(admin().command({ configureFailPoint: 'failCommand' }))).code).toBe(20);
    expect(await serverError(configure('sometimes'))).toMatchObject({ code: 2, message: 'unknown mode: sometimes' });
    expect((await serverError(configure({ times: -1 }))).code).toBe(2);
    expect(await serverError(admin().command({ configureFailPoint: 'hangBeforeLoggingCreateCollection', mode: 'alwaysOn' }))).toMatchObject(
      {
        code: 266,
        message: "The fail point 'hangBeforeLoggingCreateCollection' is not supported by the embedded engine",
      },
    );
    const elsewhere = await serverError(t.db.command({ configureFailPoint: 'failCommand', mode: 'off' }));
    expect(elsewhere.code).toBe(13);
  });

  it('closeConnection cuts the connection without a reply and without running the command; the driver retries the write', async () => {
    await configure({ times: 1 }, { failCommands: ['insert'], closeConnection: true });
    const noRetry = await MongoClient.connect(t.database.uri, { appName: 'gateway', retryWrites: false });
    try {
      const error = await serverError(noRetry.db(t.database.dbName).collection<AnyDocument>('cut').insertOne({ _id: 1 }));
      expect(error.name).toBe('MongoNetworkError');
    } finally {
      await noRetry.close();
    }
    expect(await t.collection('cut').countDocuments()).toBe(0);

    await configure({ times: 1 }, { failCommands: ['insert'], closeConnection: true });
    await t.collection('cut').insertOne({ _id: 2 });
    expect(sent('insert')).toBe(2);
    expect(await t.collection('cut').find().toArray()).toEqual([{ _id: 2 }]);
  });

  it('labels a retriable code on a retryable write RetryableWriteError itself, so the driver retries', async () => {
    await configure({ times: 1 }, { failCommands: ['insert'], errorCode: 10107 });
    await t.collection('retried').insertOne({ _id: 1 });
    expect(sent('insert')).toBe(2);

    const session = t.client.startSession();
    try {
      const insert = (txnNumber: number) => ({ insert: 'labels', documents: [{ _id: txnNumber }], txnNumber: Long.fromNumber(txnNumber) });
      await configure({ times: 1 }, { failCommands: ['insert'], errorCode: 91 });
      const retriable = await serverError(t.db.command(insert(1), { session }));
      expect(retriable.code).toBe(91);
      expect([...(retriable.errorLabelSet as Set<string>)]).toContain('RetryableWriteError');
      await configure({ times: 1 }, { failCommands: ['insert'], errorCode: 2 });
      expect((await serverError(t.db.command(insert(2), { session }))).errorLabelSet).toEqual(new Set());
    } finally {
      await session.endSession();
    }
    // Without a transaction number it is no retryable write: no label.
    await configure({ times: 1 }, { failCommands: ['insert'], errorCode: 91 });
    const unlabelled = await serverError(t.db.command({ insert: 'labels', documents: [{ _id: 9 }] }));
    expect([...(unlabelled.errorLabelSet as Set<string>)]).not.toContain('RetryableWriteError');
  });

  it('errorLabels replace the labels the server would add: an empty list suppresses them', async () => {
    await configure({ times: 1 }, { failCommands: ['insert'], errorCode: 10107, errorLabels: [] });
    const error = await serverError(t.collection('override').insertOne({ _id: 1 }));
    expect(error).toMatchObject({ code: 10107, errorLabelSet: new Set() });
    expect(sent('insert')).toBe(1);

    await configure({ times: 1 }, { failCommands: ['find'], errorCode: 2, errorLabels: ['ResumableChangeStreamError', 'Custom'] });
    expect((await serverError(t.collection('override').findOne())).errorLabelSet).toEqual(
      new Set(['ResumableChangeStreamError', 'Custom']),
    );
  });

  it('writeConcernError is reported after the write was applied, with the labels given or those mongod adds', async () => {
    await configure({ times: 1 }, { failCommands: ['insert'], writeConcernError: { code: 100, errmsg: 'Not enough data-bearing nodes' } });
    const error = await serverError(t.collection('wce').insertOne({ _id: 1 }));
    expect(error).toMatchObject({ name: 'MongoWriteConcernError', code: 100 });
    expect(await t.collection('wce').find().toArray()).toEqual([{ _id: 1 }]);

    // A retriable code on a retryable write: labelled RetryableWriteError, and the retry is answered from the record.
    await configure({ times: 1 }, { failCommands: ['insert'], writeConcernError: { code: 91, errmsg: 'Replication is being shut down' } });
    await t.collection('wce').insertOne({ _id: 2 });
    expect(sent('insert')).toBe(3);
    expect(await t.collection('wce').countDocuments()).toBe(2);

    // Only commands that take a write concern get one.
    await configure('alwaysOn', { failCommands: ['find'], writeConcernError: { code: 91, errmsg: 'x' } });
    expect(await t.collection('wce').findOne({ _id: 1 })).toEqual({ _id: 1 });
  });

  it('blockConnection delays the command and then runs it, even when its client gave up waiting', async () => {
    await configure({ times: 1 }, { failCommands: ['insert'], blockConnection: true, blockTimeMS: 300 });
    const impatient = await MongoClient.connect(t.database.uri, { appName: 'gateway', retryWrites: false, socketTimeoutMS: 100 });
    try {
      const error = await serverError(impatient.db(t.database.dbName).collection<AnyDocument>('blocked').insertOne({ _id: 1 }));
      expect(error.name).toBe('MongoNetworkTimeoutError');
    } finally {
      await impatient.close();
    }
    await expect.poll(() => t.collection('blocked').countDocuments(), { timeout: 2000 }).toBe(1);

    await configure({ times: 1 }, { failCommands: ['find'], blockConnection: true, blockTimeMS: 200, errorCode: 2 });
    const before = Date.now();
    expect((await serverError(t.collection('blocked').findOne())).code).toBe(2);
    expect(Date.now() - before).toBeGreaterThanOrEqual(190);
    await configure({ times: 1 }, { failCommands: ['find'], blockConnection: true });
    expect(await serverError(t.collection('blocked').findOne())).toMatchObject({
      code: 72,
      message: "must specify 'blockTimeMS' when 'blockConnection' is true",
    });
  });

  it('appName aims it at one application: other clients are left alone', async () => {
    await configure('alwaysOn', { failCommands: ['find'], errorCode: 2, appName: 'other' });
    expect(await t.collection('apps').findOne()).toBeNull();
    expect((await serverError(other.db(t.database.dbName).collection('apps').findOne())).code).toBe(2);
  });

  it("namespace narrows it to one collection's commands, a getMore's by the collection it names", async () => {
    await t.collection('one').insertMany([{ _id: 1 }, { _id: 2 }]);
    await t.collection('two').insertMany([{ _id: 1 }, { _id: 2 }]);
    const namespace = `${t.database.dbName}.two`;
    await configure('alwaysOn', { failCommands: ['find', 'getMore'], errorCode: 2, namespace });
    const firstBatch = { batchSize: 1 };
    const one = await t.db.command({ find: 'one', ...firstBatch });
    expect(await t.db.command({ getMore: one.cursor.id, collection: 'one' })).toMatchObject({ ok: 1 });
    expect((await serverError(t.db.command({ find: 'two', ...firstBatch }))).code).toBe(2);

    await configure('alwaysOn', { failCommands: ['getMore'], errorCode: 2, namespace });
    const two = await t.db.command({ find: 'two', ...firstBatch });
    expect((await serverError(t.db.command({ getMore: two.cursor.id, collection: 'two' }))).code).toBe(2);
  });

  it('fails a getMore before the server knows its cursor is a change stream: no ResumableChangeStreamError', async () => {
    const aggregate = { aggregate: 'stream', pipeline: [{ $changeStream: {} }], cursor: {} };
    const { cursor } = await t.db.command(aggregate);
    await configure({ times: 1 }, { failCommands: ['getMore'], errorCode: 10107 });
    const getMore = { getMore: cursor.id, collection: 'stream', maxTimeMS: 10 };
    expect(await serverError(t.db.command(getMore))).toMatchObject({ code: 10107, errorLabelSet: new Set() });

    // An aggregate opening a change stream is known to be one: its retriable error is resumable.
    await configure({ times: 1 }, { failCommands: ['aggregate'], errorCode: 10107 });
    expect((await serverError(t.db.command(aggregate))).errorLabelSet).toEqual(new Set(['ResumableChangeStreamError']));

    // failGetMoreAfterCursorCheckout fires once the cursor is found: the label is there.
    const reopened = (await t.db.command(aggregate)).cursor;
    await admin().command({ configureFailPoint: 'failGetMoreAfterCursorCheckout', mode: { times: 1 }, data: { errorCode: 6 } });
    expect(await serverError(t.db.command({ ...getMore, getMore: reopened.id }))).toMatchObject({
      code: 6,
      errorLabelSet: new Set(['ResumableChangeStreamError']),
    });
  });
});

describe.skipIf(external)('error labels without fail points', () => {
  let t: Connected;
  beforeAll(async () => {
    t = await connect();
  });
  afterAll(async () => {
    await t?.stop();
  });

  it('a change stream that cannot go on is labelled NonResumableChangeStreamError (280, _id projected out)', async () => {
    const { cursor } = await t.db.command({ aggregate: 'fatal', pipeline: [{ $changeStream: {} }, { $project: { _id: 0 } }], cursor: {} });
    await t.collection('fatal').insertOne({ _id: 1 });
    const error = await serverError(t.db.command({ getMore: cursor.id, collection: 'fatal', maxTimeMS: 1000 }));
    expect(error).toMatchObject({ code: 280, errorLabelSet: new Set(['NonResumableChangeStreamError']) });
  });

  it('a change stream whose resume point left the history is labelled NonResumableChangeStreamError (286)', async () => {
    const server = await startEmbeddedServer({ oplogSizeBytes: 2000 });
    const client = await MongoClient.connect(server.uri);
    try {
      const collection = client.db('history').collection<{ _id: number; pad: string }>('lost');
      const stream = collection.watch([], { maxAwaitTimeMS: 10 });
      await stream.tryNext();
      const token = stream.resumeToken;
      await stream.close();
      for (let i = 0; i < 20; i++) await collection.insertOne({ _id: i, pad: 'x'.repeat(200) });
      const error = await serverError(
        client.db('history').command({ aggregate: 'lost', pipeline: [{ $changeStream: { resumeAfter: token } }], cursor: {} }),
      );
      expect(error).toMatchObject({ code: 286, errorLabelSet: new Set(['NonResumableChangeStreamError']) });
    } finally {
      await client.close();
      await server.close();
    }
  });
});
