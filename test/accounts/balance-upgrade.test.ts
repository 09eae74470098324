import { type Db, MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { subscriptionsRunning } from '../subscriptions/helpers.js';
import { startTestDatabase, type TestDatabase } from '../support/database.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { connectAs, type TestSocket } from '../support/websocket.js';

let database: TestDatabase;
let client: MongoClient;
let db: Db;

beforeAll(async () => {
  database = await startTestDatabase();
  client = await MongoClient.connect(database.uri);
  db = client.db();
});
afterAll(async () => {
  await client?.close();
  await database?.stop();
});

/** Users as versions before micro-points stored them: balances in ten-thousandths of a point. */
const LEGACY_USERS = [
  { id: 1, username: 'alice', balanceUnits: 125_000, answer: '12.5' },
  { id: 2, username: 'bob', balanceUnits: 1, answer: '0.0001' },
  { id: 3, username: 'carol', balanceUnits: 9_999_999_999_999, answer: '999999999.9999' },
  { id: 4, username: 'dave', balanceUnits: -2_500, answer: '-0.25' },
  { id: 5, username: 'erin', balanceUnits: 0, answer: '0' },
];

async function quotaBody(gateway: TestGateway, userId: number): Promise<string> {
  const response = await fetch(`${gateway.url}/quota`, { headers: { authorization: await gateway.token(userId) } });
  return response.text();
}

const storedUsers = () => db.collection('users').find({}).sort({ id: 1 }).toArray();

describe('a database whose balances are in ten-thousandths of a point', () => {
  it('answers /quota with the very numbers it answered before, and rewrites nothing', async () => {
    await db
      .collection('users')
      .insertMany(LEGACY_USERS.map(({ id, username, balanceUnits }) => ({ id, username, balanceUnits, lastConversationId: 0 })));
    const before = await storedUsers();
    const gateway = await startTestGateway({}, { database });
    try {
      const bodies = await Promise.all(LEGACY_USERS.map(({ id }) => quotaBody(gateway, id)));
      expect(bodies).toEqual(LEGACY_USERS.map(({ answer }) => `{"status":true,"quota":${answer}}`));
      expect(await storedUsers()).toEqual(before);
    } finally {
      await gateway.stop();
    }
  });

  it('counts both what a writer of the old unit charges and what the gateway credits in micro-points, at once and live', async () => {
    const gateway = await startTestGateway({}, { database });
    let socket: TestSocket | undefined;
    try {
      socket = await connectAs(gateway.url, `Bearer ${await gateway.token(1)}`);
      const running = await subscriptionsRunning(gateway.url);
      const quota = socket.subscribe('subscription { quota }');
      await expect.poll(() => subscriptionsRunning(gateway.url), { timeout: 5_000, interval: 20 }).toBe(running + 1);
      expect((await quota.next()).payload.data).toEqual({ quota: 12.5 });

      // A gift of 3.141593 points, credited by this service in micro-points.
      expect(await gateway.domains.accounts.store.creditGift(1, 'cert', 3_141_593)).toBe(true);
      expect((await quota.next()).payload.data).toEqual({ quota: 15.641593 });
      // The chat service of the previous version charges 0.25 points in its own unit, as it always has.
      await db.collection('users').updateOne({ id: 1 }, { $inc: { balanceUnits: -2_500 } });
      expect((await quota.next()).payload.data).toEqual({ quota: 15.391593 });

      expect(await quotaBody(gateway, 1)).toBe('{"status":true,"quota":15.391593}');
      expect(await db.collection('users').findOne({ id: 1 }, { projection: { _id: 0, balanceMicros: 1, balanceUnits: 1 } })).toEqual({
        balanceMicros: 3_141_593,
        balanceUnits: 122_500,
      });
    } finally {
      await socket?.close();
      await gateway.stop();
    }
  });

  it('replaces both fields when a seed file sets a balance, so none of the old unit is added on top', async () => {
    const gateway = await startTestGateway({}, { database });
    try {
      await gateway.seed({ users: [{ id: 2, username: 'bob', quota: 7.000001 }] });
      expect(await quotaBody(gateway, 2)).toBe('{"status":true,"quota":7.000001}');
    } finally {
      await gateway.stop();
    }
  });
});
