import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SsoStub } from '../../src/sso-stub/stub-server.js';
import type { TestGateway } from '../support/gateway.js';
import { buy, NOT_ENOUGH_MONEY, quotaOf, rest, startOfficialGateway, startStub, SUCCESS, withConcurrency } from './official.js';

const BUYS = 2_000;
const CONCURRENCY = 25;

let stub: SsoStub;
let gateway: TestGateway;

beforeAll(async () => {
  stub = await startStub({});
  gateway = await startOfficialGateway(stub);
});

afterAll(async () => {
  await gateway?.stop();
  await stub?.close();
});

/** A small deterministic generator (mulberry32), so that a failure can be replayed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

describe('balances after thousands of operations', () => {
  it(`stay exact to 4 decimals after ${BUYS} buys of assorted sizes by several users, some refused`, async () => {
    const next = random(20_240_611);
    const people = [
      { id: 1, username: 'ann', quota: 12.3456 },
      { id: 2, username: 'ben', quota: 0.0001 },
      { id: 3, username: 'cat', quota: 99_999.9999 },
      { id: 4, username: 'dan', quota: 0 },
    ];
    await gateway.seed({ users: people });
    // Wallets in cents, the provider's own unit; dan's is small, so many of his buys are refused.
    const walletCents = [50_000_000, 30_000_000, 90_000_000, 5_000];
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
      sizes.map((size, index) => () => buy(gateway, tokens[index % people.length]!, size)),
    );
    const elapsedMs = performance.now() - started;

    const boughtPoints = people.map(() => 0);
    expect(answers.filter((answer) => answer.text !== SUCCESS && answer.text !== NOT_ENOUGH_MONEY)).toEqual([]);
    answers.forEach((answer, index) => {
      if (answer.text === SUCCESS) boughtPoints[index % people.length]! += sizes[index]!;
    });
    expect(answers.filter((answer) => answer.text === NOT_ENOUGH_MONEY).length).toBeGreaterThan(0);
    for (const [index, person] of people.entries()) {
      const expectedUnits = Math.round(person.quota * 10_000) + boughtPoints[index]! * 10_000;
      expect(await rest(gateway, tokens[index]!, '/quota')).toEqual({
        status: 200,
        text: `{"status":true,"quota":${expectedUnits / 10_000}}`,
      });
      // Each point costs 10 cents (quota/10 money); the wallet is exact in cents.
      expect(Math.round(stub.wallet(person.username) * 100)).toBe(walletCents[index]! - boughtPoints[index]! * 10);
    }
    expect(await quotaOf(gateway, tokens[2]!)).toBe(Number(((99_999.9999 * 10_000 + boughtPoints[2]! * 10_000) / 10_000).toFixed(4)));
    console.info(`${BUYS} buys with ${CONCURRENCY} at once took ${Math.round(elapsedMs)} ms`);
  }, 60_000);
});
