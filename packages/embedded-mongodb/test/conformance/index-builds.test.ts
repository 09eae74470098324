import { type Document } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { connect, type Connected, servesReplicaSet } from '../support/connect.js';

/**
 * createIndexes of indexes that exist answers without reading the collection, whatever its size
 * (every Mongoose process asks for its indexes at start); each test passes against MongoDB too.
 * serverStatus's indexBuilds counts the builds and their scans of the collection.
 */
let t: Connected;
let replicaSet: boolean;

beforeAll(async () => {
  t = await connect();
  replicaSet = await servesReplicaSet();
});
afterAll(() => t?.stop());

const CONVERSATIONS = { key: { userId: 1, id: -1 }, name: 'userId_1_id_-1', unique: true };
const BY_NAME = { key: { name: 1 }, name: 'name_1' };
const BY_MODEL = { key: { model: 1, userId: 1 }, name: 'model_1_userId_1' };

interface IndexBuilds {
  total: number;
  phases: { scanCollection: number };
}

async function indexBuilds(): Promise<IndexBuilds> {
  const { indexBuilds } = await t.db.admin().command({ serverStatus: 1 });
  expect(indexBuilds).toMatchObject({ total: expect.any(Number), phases: { scanCollection: expect.any(Number) } });
  return indexBuilds as IndexBuilds;
}

/** The reply without the cluster time a replica set adds to every reply. */
async function createIndexes(collection: string, indexes: Document[]): Promise<Document> {
  const reply = await t.db.command({ createIndexes: collection, indexes });
  delete reply.$clusterTime;
  delete reply.operationTime;
  return reply;
}

describe.each([1_000, 100_000])('createIndexes on a collection of %i documents', (count) => {
  const name = `conversations_${count}`;

  beforeAll(async () => {
    for (let from = 0; from < count; from += 10_000) {
      const batch = Array.from({ length: Math.min(10_000, count - from) }, (_, i) => ({
        userId: (from + i) % 500,
        id: from + i,
        name: `Conversation ${from + i}`,
        model: 'gpt-4o',
      }));
      await t.collection(name).insertMany(batch);
    }
    await createIndexes(name, [CONVERSATIONS]);
  }, 120_000);

  it('answers "all indexes already exist" without reading a document when every index exists', async () => {
    const before = await indexBuilds();
    const reply = await createIndexes(name, [CONVERSATIONS, { key: { _id: 1 }, name: '_id_' }]);
    expect(reply).toEqual({ numIndexesBefore: 2, numIndexesAfter: 2, note: 'all indexes already exist', ok: 1 });
    expect(await indexBuilds()).toEqual(before);
  });

  it('builds only the new indexes of a request that also names existing ones, in one scan of the documents', async () => {
    const before = await indexBuilds();
    const reply = await createIndexes(name, [CONVERSATIONS, BY_NAME, BY_MODEL]);
    expect(reply).toEqual({
      numIndexesBefore: 2,
      numIndexesAfter: 4,
      createdCollectionAutomatically: false,
      ...(replicaSet ? { commitQuorum: 'votingMembers' } : {}),
      note: 'index already exists',
      ok: 1,
    });
    const after = await indexBuilds();
    expect(after.total - before.total).toBe(1);
    expect(after.phases.scanCollection - before.phases.scanCollection).toBe(1);
    expect((await t.collection(name).listIndexes().toArray()).map((index) => index.name)).toEqual([
      '_id_',
      CONVERSATIONS.name,
      BY_NAME.name,
      BY_MODEL.name,
    ]);
    await t.db.command({ dropIndexes: name, index: [BY_NAME.name, BY_MODEL.name] });
  });
});
