import { setTimeout as sleep } from 'node:timers/promises';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { addressRate, mostServedWithin } from '../support/rate-limits.js';
import { startTestSidecar } from '../support/sidecar.js';
import { json, type RawAnswer, type RawRequest, send } from './http.js';

/** Per caller: 5 a second, plus a burst of 10 in any 10 seconds; per address ten times that. */
const RATE = 5;

let gateway: TestGateway;
const tokens = new Map<number, string>();

beforeAll(async () => {
  gateway = await startTestGateway({ RATE_LIMIT: String(RATE) });
  const users = Array.from({ length: 20 }, (_, index) => index + 1);
  await gateway.seed({
    users: users.map((id) => ({ id, username: `user${id}`, quota: id, apiKeys: [`sk-user${id}-0123456789abcdef`] })),
  });
  for (const id of users) tokens.set(id, `Bearer ${await gateway.token(id)}`);
});

afterAll(() => gateway?.stop());

/**
 * The timeout of each flood test: a flood that ends within it had at most
 * `mostServedWithin(rate, FLOOD_SECONDS)` requests let through, however slowly they arrived, so a
 * flood one larger than that is limited on any machine that runs the test at all.
 */
const FLOOD_SECONDS = 20;
/** A flood one caller cannot get through within `FLOOD_SECONDS` (135 at most are let through), and one address can at once (150). */
const CALLER_FLOOD = mostServedWithin(RATE, FLOOD_SECONDS) + 5;

/** Each test sends from its own loopback address, so address budgets do not mix. */
const address = (n: number) => `127.0.0.${n}`;

function flood(count: number, request: RawRequest): Promise<RawAnswer[]> {
  return Promise.all(Array.from({ length: count }, () => send(gateway.url, request)));
}

function graphqlRequest(user: number | undefined, localAddress: string): RawRequest {
  return {
    method: 'POST',
    path: '/graphql',
    headers: { 'content-type': 'application/json', ...(user === undefined ? {} : { authorization: tokens.get(user)! }) },
    body: JSON.stringify({ query: '{ quota }' }),
    localAddress,
  };
}

function expectRetryAfter(answer: RawAnswer): number {
  const seconds = Number(answer.headers['retry-after']);
  expect(Number.isInteger(seconds) && seconds >= 1 && seconds <= 10, String(answer.headers['retry-after'])).toBe(true);
  return seconds;
}

describe('per caller, after authentication', () => {
  it(
    'answers a caller over its rate 429 with Retry-After and code RATE_LIMITED on /graphql',
    { timeout: FLOOD_SECONDS * 1_000 },
    async () => {
      const answers = await flood(CALLER_FLOOD, graphqlRequest(1, address(10)));
      const served = answers.filter((answer) => answer.status === 200);
      const limited = answers.filter((answer) => answer.status === 429);
      expect(served.length + limited.length).toBe(CALLER_FLOOD);
      // 5 a second and a burst of 10 at once; more windows open while the flood is under way, as many as its time allows.
      expect(served.length).toBeGreaterThanOrEqual(3 * RATE);
      expect(served.length).toBeLessThanOrEqual(mostServedWithin(RATE, FLOOD_SECONDS));
      expect(limited.length).toBeGreaterThanOrEqual(CALLER_FLOOD - mostServedWithin(RATE, FLOOD_SECONDS));
      for (const answer of limited) {
        const retryAfter = expectRetryAfter(answer);
        expect(answer.headers['content-type']).toMatch(/^application\/json/);
        expect(json(answer)).toEqual({ errors: [{ message: 'too many requests', extensions: { code: 'RATE_LIMITED', retryAfter } }] });
      }
    },
  );

  // The flood and the wait for Retry-After (at most 10 s) within the timeout: a flood past what 31 s let through.
  it('serves the caller again once Retry-After has passed', { timeout: 31_000 }, async () => {
    // From many addresses, so that only the caller's limit answers 429.
    const count = mostServedWithin(RATE, 31) + 5;
    const answers = await Promise.all(
      Array.from({ length: count }, (_, index) =>
        send(gateway.url, graphqlRequest(2, `127.0.${100 + Math.floor(index / 200)}.${1 + (index % 200)}`)),
      ),
    );
    const limited = answers.find((answer) => answer.status === 429)!;
    await sleep(expectRetryAfter(limited) * 1_000 + 100);
    const again = await send(gateway.url, graphqlRequest(2, address(11)));
    expect(again.status).toBe(200);
    expect(json(again)).toEqual({ data: { quota: 2 } });
  });

  it('keeps serving another caller, from the same address, while one caller floods', { timeout: FLOOD_SECONDS * 1_000 }, async () => {
    // 140 and 3 from one address: within what it may send at once (150), so only the caller's limit answers 429.
    const floodA = flood(CALLER_FLOOD, graphqlRequest(3, address(12)));
    const fromB = [];
    for (let i = 0; i < 3; i++) fromB.push(await send(gateway.url, graphqlRequest(4, address(12))));
    const answersA = await floodA;
    expect(answersA.some((answer) => answer.status === 429)).toBe(true);
    for (const answer of fromB) {
      expect(answer.status).toBe(200);
      expect(json(answer)).toEqual({ data: { quota: 4 } });
    }
  });

  const restEndpoints: [string, string, 'message' | 'error', string?][] = [
    ['GET', '/conversation/list', 'message'],
    ['GET', '/conversation/load?id=1', 'message'],
    ['GET', '/conversation/delete?id=1', 'message'],
    ['GET', '/quota', 'error'],
    ['POST', '/buy', 'error', '{"quota":1}'],
    ['GET', '/package', 'error'],
  ];
  restEndpoints.forEach(([method, path, field, body], index) => {
    const user = 10 + index;
    it(
      `answers 429 with Retry-After and {"status":false,"${field}":…} on ${method} ${path}`,
      { timeout: FLOOD_SECONDS * 1_000 },
      async () => {
        const answers = await flood(CALLER_FLOOD, {
          method,
          path,
          headers: { authorization: tokens.get(user)!, ...(body ? { 'content-type': 'application/json' } : {}) },
          ...(body ? { body } : {}),
          localAddress: address(20 + index),
        });
        const limited = answers.filter((answer) => answer.status === 429);
        expect(limited.length).toBeGreaterThanOrEqual(CALLER_FLOOD - mostServedWithin(RATE, FLOOD_SECONDS));
        for (const answer of limited) {
          expectRetryAfter(answer);
          expect(answer.text).toBe(`{"status":false,"${field}":"too many requests"}`);
        }
        expect(answers.every((answer) => answer.status === 200 || answer.status === 429)).toBe(true);
      },
    );
  });

  it(
    'answers 429 with Retry-After in the endpoint’s shape through the sidecar, which the gateway limits',
    { timeout: FLOOD_SECONDS * 1_000 },
    async () => {
      const sidecar = await startTestSidecar(`${gateway.url}/graphql`);
      try {
        const answers = await Promise.all(
          Array.from({ length: CALLER_FLOOD }, () => send(sidecar.url, { path: '/quota', headers: { authorization: tokens.get(7)! } })),
        );
        const limited = answers.filter((answer) => answer.status === 429);
        expect(limited.length).toBeGreaterThanOrEqual(CALLER_FLOOD - mostServedWithin(RATE, FLOOD_SECONDS));
        for (const answer of limited) {
          expectRetryAfter(answer);
          expect(answer.text).toBe('{"status":false,"error":"too many requests"}');
        }
        expect(answers.every((answer) => answer.status === 200 || answer.status === 429)).toBe(true);
      } finally {
        await sidecar.stop();
      }
    },
  );

  it('counts a caller’s requests on /graphql and on the REST endpoints together', async () => {
    const user = 5;
    const graphql = flood(30, graphqlRequest(user, address(30)));
    const rest = flood(30, { path: '/quota', headers: { authorization: tokens.get(user)! }, localAddress: address(30) });
    const served = [...(await graphql), ...(await rest)].filter((answer) => answer.status === 200);
    // Together: 15 in one window (5 + a burst of 10); counted apart it would be 30.
    expect(served.length).toBeGreaterThanOrEqual(RATE);
    expect(served.length).toBeLessThanOrEqual(25);
  });
});

describe('per address, before authentication', () => {
  // Per address ten times RATE_LIMIT: 10 a second and a burst of 20 at RATE_LIMIT=1.
  const ADDRESS_RATE = addressRate(1);
  const FLOOD = 300;
  /** The flood test's own timeout: within it, at most `mostServedWithin(ADDRESS_RATE, 20)` = 270 are let through. */
  const FLOOD_SECONDS = 20;
  let limitedGateway: TestGateway;

  beforeAll(async () => {
    limitedGateway = await startTestGateway({ RATE_LIMIT: '1' });
    await limitedGateway.seed({ users: [{ id: 6, username: 'user6', quota: 6 }] });
  });

  afterAll(() => limitedGateway?.stop());

  it(
    'answers a flood from one address 429 before looking credentials up, in each endpoint’s shape',
    async () => {
      const key = 'sk-not-a-key-0123456789abcdef';
      const shapes: [RawRequest, (answer: RawAnswer) => void][] = [
        [{ path: '/conversation/list' }, (answer) => expect(answer.text).toBe('{"status":false,"message":"too many requests"}')],
        [{ path: '/quota' }, (answer) => expect(answer.text).toBe('{"status":false,"error":"too many requests"}')],
        [graphqlRequest(undefined, address(40)), (answer) => expect(json(answer).errors[0].extensions.code).toBe('RATE_LIMITED')],
      ];
      let answers: RawAnswer[] = [];
      const commands = await limitedGateway.commandsDuring(async () => {
        answers = await Promise.all(
          Array.from({ length: FLOOD }, (_, index) => {
            const [request] = shapes[index % shapes.length]!;
            return send(limitedGateway.url, { ...request, headers: { ...request.headers, authorization: key }, localAddress: address(40) });
          }),
        );
      });
      const refused = answers.filter((answer) => answer.status === 401);
      const limited = answers.filter((answer) => answer.status === 429);
      expect(refused.length + limited.length).toBe(FLOOD);
      // However slowly the requests arrive, a flood that ends within the test's timeout had at most
      // 270 let through: the count decides, not the machine's speed.
      expect(refused.length).toBeLessThanOrEqual(mostServedWithin(ADDRESS_RATE, FLOOD_SECONDS));
      expect(limited.length).toBeGreaterThanOrEqual(FLOOD - mostServedWithin(ADDRESS_RATE, FLOOD_SECONDS));
      // At least the address's whole burst is let through, whatever the timing: 10 a second and 20 more.
      expect(refused.length).toBeGreaterThanOrEqual(3 * ADDRESS_RATE);
      // Only the requests let through cost a lookup of the key.
      expect(commands.length).toBe(refused.length);
      answers.forEach((answer, index) => {
        if (answer.status !== 429) return;
        expectRetryAfter(answer);
        shapes[index % shapes.length]![1](answer);
      });
    },
    FLOOD_SECONDS * 1_000,
  );

  it('keeps serving other addresses meanwhile', async () => {
    const authorization = `Bearer ${await limitedGateway.token(6)}`;
    const answer = await send(limitedGateway.url, {
      ...graphqlRequest(undefined, address(41)),
      headers: { 'content-type': 'application/json', authorization },
    });
    expect(answer.status).toBe(200);
  });

  it('does not limit the health probes', async () => {
    const answers = await Promise.all(
      Array.from({ length: FLOOD }, () => send(limitedGateway.url, { path: '/healthz', localAddress: address(42) })),
    );
    expect(answers.every((answer) => answer.status === 200)).toBe(true);
  });
});

describe('configuration', () => {
  it('limits nothing with RATE_LIMIT=0', async () => {
    const unlimited = await startTestGateway({ RATE_LIMIT: '0' });
    try {
      await unlimited.seed({ users: [{ id: 1, username: 'alice', quota: 1 }] });
      const authorization = `Bearer ${await unlimited.token(1)}`;
      const answers = await Promise.all(
        Array.from({ length: 200 }, () => send(unlimited.url, { path: '/quota', headers: { authorization }, localAddress: address(50) })),
      );
      expect(answers.every((answer) => answer.status === 200)).toBe(true);
    } finally {
      await unlimited.stop();
    }
  });
});
