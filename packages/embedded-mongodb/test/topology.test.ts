import { Long, MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { type EmbeddedServer, type EmbeddedServerOptions, startEmbeddedServer } from '../src/index.js';
import { serverError } from './support/connect.js';

/** An engine started with `options`, and a client on it, for the enclosing block. */
function engine(options: EmbeddedServerOptions): { server: EmbeddedServer; client: MongoClient } {
  const started = {} as { server: EmbeddedServer; client: MongoClient };
  beforeAll(async () => {
    started.server = await startEmbeddedServer(options);
    started.client = await MongoClient.connect(started.server.uri);
  });
  afterAll(async () => {
    await started.client?.close();
    await started.server?.close();
  });
  return started;
}

/** How the engine presents itself is its own choice, so these run on the embedded engine only. */
describe.skipIf(process.env.MONGODB_URI)('topology', () => {
  describe('as a single-member replica set (the default)', () => {
    const t = engine({});

    it('answers hello as the primary of its set, naming itself as the only host', async () => {
      const hello = await t.client.db('admin').command({ hello: 1 });
      const me = new URL(t.server.uri).host;
      expect(hello).toMatchObject({
        isWritablePrimary: true,
        secondary: false,
        setName: 'rs0',
        setVersion: 1,
        hosts: [me],
        primary: me,
        me,
      });
      expect(hello.lastWrite.opTime.ts).toBeDefined();
      expect(hello.operationTime).toBeDefined();
      expect(hello.$clusterTime.clusterTime).toBeDefined();
    });

    it('lets the driver discover the set from a URI without directConnection', async () => {
      const discovering = await MongoClient.connect(`mongodb://${new URL(t.server.uri).host}/?replicaSet=rs0`);
      try {
        await discovering.db('t').collection('discovered').insertOne({ a: 1 });
        expect(discovering.options.replicaSet).toBe('rs0');
        expect(await discovering.db('t').collection('discovered').countDocuments()).toBe(1);
      } finally {
        await discovering.close();
      }
    });

    it('answers replSetGetStatus with one healthy primary', async () => {
      const status = await t.client.db('admin').command({ replSetGetStatus: 1 });
      expect(status).toMatchObject({ set: 'rs0', myState: 1 });
      expect(status.members).toHaveLength(1);
      expect(status.members[0]).toMatchObject({ stateStr: 'PRIMARY', self: true, health: 1 });
    });

    it('refuses multi-document transactions, writing nothing', async () => {
      const collection = t.client.db('t').collection('tx');
      const session = t.client.startSession();
      try {
        session.startTransaction();
        const error = await serverError(collection.insertOne({ a: 1 }, { session }));
        expect(error.code).toBe(263);
        expect(error.message).toBe('A multi-document transaction is not supported by the embedded engine');
      } finally {
        await session.abortTransaction().catch(() => undefined);
        await session.endSession();
      }
      expect(await collection.countDocuments()).toBe(0);
    });
  });

  describe('as a standalone server', () => {
    const t = engine({ replicaSet: false });

    it('answers hello with no replica set and no cluster time', async () => {
      const hello = await t.client.db('admin').command({ hello: 1 });
      expect(hello.isWritablePrimary).toBe(true);
      expect(hello.setName).toBeUndefined();
      expect(hello.operationTime).toBeUndefined();
    });

    it('refuses transaction numbers and replSetGetStatus as mongod without --replSet does', async () => {
      const error = await serverError(
        t.client
          .db('t')
          .command({ insert: 'tx', documents: [{ a: 1 }], txnNumber: Long.fromNumber(1), autocommit: false, startTransaction: true }),
      );
      expect(error.code).toBe(20);
      expect(error.message).toBe('Transaction numbers are only allowed on a replica set member or mongos');
      expect((await serverError(t.client.db('admin').command({ replSetGetStatus: 1 }))).code).toBe(76);
      expect(await t.client.db('t').collection('tx').countDocuments()).toBe(0);
    });

    it('refuses change streams with code 40573', async () => {
      const error = await serverError(t.client.db('t').command({ aggregate: 'c', pipeline: [{ $changeStream: {} }], cursor: {} }));
      expect(error.code).toBe(40573);
      expect(error.message).toBe('The $changeStream stage is only supported on replica sets');
    });

    it("refuses { w: 2 } with mongod's message, writing nothing", async () => {
      const collection = t.client.db('t').collection('w2');
      const error = await serverError(collection.insertOne({ a: 1 }, { writeConcern: { w: 2 } }));
      expect(error.code).toBe(2);
      expect(error.message).toBe("cannot use 'w' > 1 when a host is not replicated");
      expect(await collection.countDocuments()).toBe(0);
    });
  });
});
