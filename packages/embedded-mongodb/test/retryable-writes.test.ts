import { type ClientSession, Long } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { connect, type Connected, serverError, servesReplicaSet } from './support/connect.js';

/** Retryable writes need a replica set member (or mongos). */
const replicaSet = await servesReplicaSet();

describe.skipIf(!replicaSet)('retryable writes', () => {
  let t: Connected;
  let session: ClientSession;

  beforeAll(async () => {
    t = await connect();
    session = t.client.startSession();
  });
  afterAll(async () => {
    await session?.endSession();
    await t?.stop();
  });

  it('answer a retried write (same session, same transaction number) without applying it again', async () => {
    const insert = { insert: 'retried', documents: [{ _id: 1 }], txnNumber: Long.fromNumber(1) };
    expect(await t.db.command(insert, { session })).toMatchObject({ n: 1, ok: 1 });
    expect(await t.db.command(insert, { session })).toMatchObject({ n: 1, ok: 1 });
    const increment = { findAndModify: 'retried', query: { _id: 1 }, update: { $inc: { n: 1 } }, new: true, txnNumber: Long.fromNumber(2) };
    const first = await t.db.command(increment, { session });
    const retried = await t.db.command(increment, { session });
    expect(retried.value).toEqual(first.value);
    expect(await t.collection('retried').find().toArray()).toEqual([{ _id: 1, n: 1 }]);
  });

  it('refuse a transaction number older than the last one used on the session', async () => {
    await t.db.command({ insert: 'retried', documents: [{ _id: 2 }], txnNumber: Long.fromNumber(5) }, { session });
    const error = await serverError(
      t.db.command({ insert: 'retried', documents: [{ _id: 3 }], txnNumber: Long.fromNumber(4) }, { session }),
    );
    expect(error.code).toBe(225);
    expect(await t.collection('retried').countDocuments({ _id: 3 })).toBe(0);
  });

  it('are what the driver uses by default, through Mongoose as well', async () => {
    const result = await t.collection('implicit').insertOne({ a: 1 });
    expect(result.acknowledged).toBe(true);
    expect(await t.collection('implicit').countDocuments()).toBe(1);
  });
});
