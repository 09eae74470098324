import { type Db, MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startTestDatabase, type TestDatabase } from '../support/database.js';
import { startTestGateway } from '../support/gateway.js';

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

async function quotaBodies(): Promise<string[]> {
  const gateway = await startTestGateway({}, { database });
  try {
    return await Promise.all(
      LEGACY_USERS.map(async ({ id }) => {
        const response = await fetch(`${gateway.url}/quota`, { headers: { authorization: await gateway.token(id) } });
        return response.text();
      }),
    );
  } finally {
    await gateway.stop();
  }
}

const stored = () =>
  db
    .collection('users')
    .find({}, { projection: { _id: 0, id: 1, balanceMicros: 1, balanceUnits: 1 } })
    .sort({ id: 1 })
    .toArray();

describe('upgrading a database whose balances are in ten-thousandths of a point', () => {
  it('answers /quota with the very numbers it answered before, and holds the balances in micro-points from the first start on', async () => {
    await db
      .collection('users')
      .insertMany(LEGACY_USERS.map(({ id, username, balanceUnits }) => ({ id, username, balanceUnits, lastConversationId: 0 })));

    expect(await quotaBodies()).toEqual(LEGACY_USERS.map(({ answer }) => `{"status":true,"quota":${answer}}`));
    expect(await stored()).toEqual(LEGACY_USERS.map(({ id, balanceUnits }) => ({ id, balanceMicros: balanceUnits * 100 })));

    // A second start finds nothing left to move.
    const before = await db.collection('users').find({}).sort({ id: 1 }).toArray();
    expect(await quotaBodies()).toEqual(LEGACY_USERS.map(({ answer }) => `{"status":true,"quota":${answer}}`));
    expect(await db.collection('users').find({}).sort({ id: 1 }).toArray()).toEqual(before);
  });

  it('adds what a writer of the old unit wrote after the upgrade at the next start, without losing either part', async () => {
    // An instance not upgraded yet (or a chat service still writing the old field) charges alice 0.25.
    await db.collection('users').updateOne({ id: 1 }, { $inc: { balanceUnits: -2_500 } });
    const [alice] = await quotaBodies();
    expect(alice).toBe('{"status":true,"quota":12.25}');
    expect(await db.collection('users').findOne({ id: 1 }, { projection: { _id: 0, balanceMicros: 1, balanceUnits: 1 } })).toEqual({
      balanceMicros: 12_250_000,
    });
  });
});
