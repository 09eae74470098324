import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { SsoStub } from '../../src/sso-stub/stub-server.js';
import type { TestGateway } from '../support/gateway.js';
import { seededRandom } from '../support/random.js';
import {
  buy,
  eventually,
  NOT_CONFIRMED,
  NOT_ENOUGH_MONEY,
  quotaOf,
  rest,
  startOfficialGateway,
  startStub,
  SUCCESS,
  withConcurrency,
} from './official.js';

const BUYS = 1_500;
const CONCURRENCY = 25;

let stub: SsoStub;
let gateway: TestGateway;

beforeAll(async () => {
  stub = await startStub({});
  gateway = await startOfficialGateway(stub, { SETTLEMENT_INTERVAL_MS: '200' });
});

afterAll(async () => {
  await gateway?.stop();
  await stub?.close();
});

describe('balances after thousands of operations', () => {
  it(`stay exact to 6 decimals, and agree with the wallets, after ${BUYS} buys of assorted sizes by several users`, async () => {
    const next = seededRandom(20_240_611);
    const people = [
      { id: 1, username: 'ann', quota: 12.345678, micros: 12_345_678 },
      { id: 2, username: 'ben', quota: 0.000001, micros: 1 },
      { id: 3, username: 'cat', quota: 99_999.999999, micros: 99_999_999_999 },
      { id: 4, username: 'dan', quota: 0, micros: 0 },
    ];
    await gateway.seed({ users: people.map(({ id, username, quota }) => ({ id, username, quota })) });
    // Wallets in cents, the provider's own unit (a point costs 10 cents); dan's is small, so most of his buys are refused.
    const walletCents = [150_000_000, 100_000_000, 250_000_000, 50_000];
    people.forEach((person, index) => stub.setUser(person.username, { wallet: walletCents[index]! / 100 }));
    const tokens = await Promise.all(people.map((person) => gateway.token(person.id)));
    const sizes = Array.from({ length: BUYS }, () => {
      const roll = next();
      // Mostly small buys, some large, the extremes included.
      return roll < 0.05 ? 1 : roll < 0.1 ? 99_999 : roll < 0.7 ? 1 + Math.floor(next() * 99) : 1 + Math.floor(next() * 99_999);
    });

    const started = performance.now();
    const answers = await withConcurrency(
      CONCURRENCY,
      sizes.map((size, index) => async () => {
        const token = tokens[index % people.length]!;
        const answer = await buy(gateway, token, size);
        if (index % 3 === 0) await quotaOf(gateway, token);
        return answer.text;
      }),
    );
    const elapsedMs = performance.now() - started;

    // A provider answer later than the timeout (a busy machine) is a "not confirmed" the settlement resolves.
    expect(answers.filter((text) => ![SUCCESS, NOT_ENOUGH_MONEY, NOT_CONFIRMED].includes(text))).toEqual([]);
    expect(answers.filter((text) => text === NOT_ENOUGH_MONEY).length).toBeGreaterThan(0);
    await eventually(
      async () => ((await gateway.models.purchases.countDocuments({ state: 'pending' })) === 0 ? true : undefined),
      30_000,
      'every purchase to be settled',
    );
    const purchases = await gateway.models.purchases.find({}, { _id: 0, orderId: 1, userId: 1, quota: 1, state: 1 }).lean();
    expect(purchases).toHaveLength(BUYS);
    const paid = new Set(stub.paidOrders());
    const credited = purchases.filter((purchase) => purchase.state === 'credited');
    expect(new Set(credited.map((purchase) => purchase.orderId))).toEqual(paid);
    expect(credited.length).toBeGreaterThanOrEqual(answers.filter((text) => text === SUCCESS).length);

    for (const [index, person] of people.entries()) {
      const boughtPoints = credited.filter((purchase) => purchase.userId === person.id).reduce((sum, purchase) => sum + purchase.quota, 0);
      const expectedMicros = person.micros + boughtPoints * 1_000_000;
      expect(await rest(gateway, tokens[index]!, '/quota')).toEqual({
        status: 200,
        text: `{"status":true,"quota":${expectedMicros / 1_000_000}}`,
      });
      expect(Math.round(stub.wallet(person.username) * 100)).toBe(walletCents[index]! - boughtPoints * 10);
    }
    console.info(`${BUYS} buys and ${Math.ceil(BUYS / 3)} balance reads, ${CONCURRENCY} at once, took ${Math.round(elapsedMs)} ms`);
  }, 120_000);
});
