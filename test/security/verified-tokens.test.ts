import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { secretKey } from '../../src/auth/access-token.js';
import { Authenticator } from '../../src/auth/authenticator.js';
import { ManualClock } from '../support/clock.js';
import { startTestGateway, TEST_JWT_SECRET, type TestGateway } from '../support/gateway.js';
import { json, postGraphql, send } from './http.js';

/**
 * A verified access token is held so that the next requests skip the signature check; these
 * are the rules that must not change because of it.
 */
const ALICE = 1;
const API_KEY = 'sk-alice-verified-tokens-0123456789';
const key = secretKey(TEST_JWT_SECRET);
const clock = new ManualClock();
let gateway: TestGateway;

beforeAll(async () => {
  gateway = await startTestGateway({}, { clock });
  await gateway.seed({ users: [{ id: ALICE, username: 'alice', quota: 12.5, apiKeys: [API_KEY] }] });
});

afterAll(() => gateway?.stop());

/** A token for `userId` that expires `seconds` after the clock's now (with a distinct `jti`, so each one is new). */
function tokenExpiringIn(userId: number, seconds: number, jti = String(Math.random())): Promise<string> {
  const now = Math.floor(clock.now() / 1000);
  return new SignJWT({ jti })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(String(userId))
    .setIssuedAt(now)
    .setExpirationTime(now + seconds)
    .sign(key);
}

const restQuota = async (token: string) =>
  (await send(gateway.url, { path: '/quota', headers: { authorization: `Bearer ${token}` } })).status;
const graphqlQuota = async (token: string) =>
  (await postGraphql(gateway.url, { query: '{ quota }' }, { authorization: `Bearer ${token}` })).status;

describe('a verified token is accepted until its exp, and not after, though it is held', () => {
  for (const [surface, call] of [
    ['REST', restQuota],
    ['GraphQL', graphqlQuota],
  ] as const) {
    it(`${surface}: 200 while valid (30 s of tolerance past exp), 401 after`, async () => {
      const token = await tokenExpiringIn(ALICE, 60);
      expect(await call(token)).toBe(200);
      await clock.advance(60_000 + 29_000);
      expect(await call(token)).toBe(200);
      await clock.advance(1_000);
      expect(await call(token)).toBe(401);
      // Refused for good: the moment it expired was not a slip.
      expect(await call(token)).toBe(401);
    });
  }

  it('a token with the same claims but a wrong signature is refused, though the right one is held', async () => {
    const token = await tokenExpiringIn(ALICE, 600, 'same-claims');
    expect(await restQuota(token)).toBe(200);
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const forged = `${header}.${payload}.${signature.startsWith('A') ? 'B' : 'A'}${signature.slice(1)}`;
    expect(await restQuota(forged)).toBe(401);
  });

  it('the same token serves its answers unchanged on both surfaces, to its own user', async () => {
    const token = await tokenExpiringIn(ALICE, 600);
    const first = await send(gateway.url, { path: '/quota', headers: { authorization: `Bearer ${token}` } });
    const again = await send(gateway.url, { path: '/quota', headers: { authorization: `Bearer ${token}` } });
    expect(again.text).toBe(first.text);
    expect(json(first)).toEqual({ status: true, quota: 12.5 });
    const graphql = await postGraphql(gateway.url, { query: '{ quota }' }, { authorization: `Bearer ${token}` });
    expect(json(graphql)).toEqual({ data: { quota: 12.5 } });
  });

  it('an API key removed from the database is refused at once: keys are never held', async () => {
    expect(
      await send(gateway.url, { path: '/quota', headers: { authorization: `Bearer ${API_KEY}` } }).then((answer) => answer.status),
    ).toBe(200);
    await gateway.models.apiKeys.deleteMany({ userId: ALICE });
    expect(
      await send(gateway.url, { path: '/quota', headers: { authorization: `Bearer ${API_KEY}` } }).then((answer) => answer.status),
    ).toBe(401);
  });
});

describe('how many verified tokens are held', () => {
  it('never more than the bound; a token that was let go is verified again and still accepted', async () => {
    const authenticator = new Authenticator({ secret: key }, gateway.domains.accounts.store, clock, 3);
    const tokens = await Promise.all(Array.from({ length: 8 }, (_, index) => tokenExpiringIn(ALICE, 600, `bounded-${index}`)));
    for (const token of tokens) {
      expect(await authenticator.authenticate(`Bearer ${token}`)).toMatchObject({ userId: ALICE });
      expect(authenticator.tokens.size).toBeLessThanOrEqual(3);
    }
    expect(authenticator.tokens.size).toBe(3);
    expect(await authenticator.authenticate(`Bearer ${tokens[0]}`)).toMatchObject({ userId: ALICE });
    await clock.advance(630_000);
    for (const token of tokens) expect(await authenticator.authenticate(`Bearer ${token}`)).toBeNull();
    // Refused tokens are not held.
    expect(authenticator.tokens.size).toBe(0);
  });
});
