import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { ManualClock } from '../support/clock.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { addressRate, servedAtOnce } from '../support/rate-limits.js';
import { startTestSidecar } from '../support/sidecar.js';
import { json, type RawAnswer, type RawRequest, send } from './http.js';

/** Per caller: 5 a second, plus a burst of 10 in any 10 seconds; per address ten times that. */
const RATE = 5;
/** The gateway's clock, which moves only when a test moves it: a flood arrives at one instant, however slowly the machine sends it. */
const clock = new ManualClock();

let gateway: TestGateway;
const tokens = new Map<number, string>();

beforeAll(async () => {
  gateway = await startTestGateway({ RATE_LIMIT: String(RATE) }, { clock });
  const users = Array.from({ length: 20 }, (_, index) => index + 1);
  await gateway.seed({
    users: users.map((id) => ({ id, username: `user${id}`, quota: id, apiKeys: [`sk-user${id}-0123456789abcdef`] })),
  });
  for (const id of users) tokens.set(id, `Bearer ${await gateway.token(id)}`);
});

afterAll(() => gateway?.stop());

// Every test begins after the burst window of the one before: fresh counters for every key.
beforeEach(() => clock.advance(10_000));

/** What one caller may send at one instant: 5 and a burst of 10. */
const CALLER_SERVED = servedAtOnce(RATE);
/** A flood of one caller from one address: over the caller's limit (15), within the address's (150). */
const CALLER_FLOOD = 40;

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

/** The clock stands still during a flood: each refusal's steady window has a whole second left. */
function expectRetryAfter(answer: RawAnswer): number {
  expect(answer.headers['retry-after']).toBe('1');
  return 1;
}

const statuses = (answers: RawAnswer[]) => answers.map((answer) => answer.status);
const countOf = (answers: RawAnswer[], status: number) => answers.filter((answer) => answer.status === status).length;

describe('per caller, after authentication', () => {
  it('answers a caller over its rate 429 with Retry-After and code RATE_LIMITED on /graphql', async () => {
    const answers = await flood(CALLER_FLOOD, graphqlRequest(1, address(10)));
    expect(countOf(answers, 200)).toBe(CALLER_SERVED);
    expect(countOf(answers, 429)).toBe(CALLER_FLOOD - CALLER_SERVED);
    for (const answer of answers) {
      if (answer.status === 200) {
        expect(json(answer)).toEqual({ data: { quota: 1 } });
        continue;
      }
      const retryAfter = expectRetryAfter(answer);
      expect(answer.headers['content-type']).toMatch(/^application\/json/);
      expect(json(answer)).toEqual({ errors: [{ message: 'too many requests', extensions: { code: 'RATE_LIMITED', retryAfter } }] });
    }
  });

  it('serves the caller again once Retry-After has passed, and not before', async () => {
    const answers = await flood(CALLER_FLOOD, graphqlRequest(2, address(11)));
    const retryAfter = expectRetryAfter(answers.find((answer) => answer.status === 429)!);
    await clock.advance(retryAfter * 1_000 - 1);
    expect((await send(gateway.url, graphqlRequest(2, address(11)))).status).toBe(429);
    await clock.advance(1);
    // A new second: the steady window's 5, and no more (the burst window still has 9 s to run).
    const again = await flood(RATE + 1, graphqlRequest(2, address(11)));
    expect(statuses(again).toSorted()).toEqual([...Array.from({ length: RATE }, () => 200), 429]);
    expect(json(again.find((answer) => answer.status === 200)!)).toEqual({ data: { quota: 2 } });
  });

  it('keeps serving another caller, from the same address, while one caller floods', async () => {
    // 40 and 3 from one address: within what it may send at once (150), so only the caller's limit answers 429.
    const floodA = flood(CALLER_FLOOD, graphqlRequest(3, address(12)));
    const fromB = [];
    for (let i = 0; i < 3; i++) fromB.push(await send(gateway.url, graphqlRequest(4, address(12))));
    const answersA = await floodA;
    expect(countOf(answersA, 200)).toBe(CALLER_SERVED);
    expect(countOf(answersA, 429)).toBe(CALLER_FLOOD - CALLER_SERVED);
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
    it(`answers 429 with Retry-After and {"status":false,"${field}":…} on ${method} ${path}`, async () => {
      const answers = await flood(CALLER_FLOOD, {
        method,
        path,
        headers: { authorization: tokens.get(user)!, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body } : {}),
        localAddress: address(20 + index),
      });
      expect(countOf(answers, 200)).toBe(CALLER_SERVED);
      expect(countOf(answers, 429)).toBe(CALLER_FLOOD - CALLER_SERVED);
      for (const answer of answers.filter((answer) => answer.status === 429)) {
        expectRetryAfter(answer);
        expect(answer.text).toBe(`{"status":false,"${field}":"too many requests"}`);
      }
    });
  });

  it('answers 429 with Retry-After in the endpoint’s shape through the sidecar, which the gateway limits', async () => {
    const sidecar = await startTestSidecar(`${gateway.url}/graphql`);
    try {
      const answers = await Promise.all(
        Array.from({ length: CALLER_FLOOD }, () => send(sidecar.url, { path: '/quota', headers: { authorization: tokens.get(7)! } })),
      );
      expect(countOf(answers, 200)).toBe(CALLER_SERVED);
      expect(countOf(answers, 429)).toBe(CALLER_FLOOD - CALLER_SERVED);
      for (const answer of answers.filter((answer) => answer.status === 429)) {
        expectRetryAfter(answer);
        expect(answer.text).toBe('{"status":false,"error":"too many requests"}');
      }
    } finally {
      await sidecar.stop();
    }
  });

  it('counts a caller’s requests on /graphql and on the REST endpoints together', async () => {
    const user = 5;
    const graphql = flood(30, graphqlRequest(user, address(30)));
    const rest = flood(30, { path: '/quota', headers: { authorization: tokens.get(user)! }, localAddress: address(30) });
    const [graphqlAnswers, restAnswers] = [await graphql, await rest];
    // Together: 15 in one instant (5 + a burst of 10); counted apart it would be 30.
    expect(countOf(graphqlAnswers, 200) + countOf(restAnswers, 200)).toBe(CALLER_SERVED);
    expect(countOf(graphqlAnswers, 429) + countOf(restAnswers, 429)).toBe(60 - CALLER_SERVED);
  });
});

describe('per address, before authentication', () => {
  // Per address ten times RATE_LIMIT: 10 a second and a burst of 20 at RATE_LIMIT=1, so 30 at one instant.
  const ADDRESS_SERVED = servedAtOnce(addressRate(1));
  const FLOOD = 300;
  const addressClock = new ManualClock();
  let limitedGateway: TestGateway;

  beforeAll(async () => {
    limitedGateway = await startTestGateway({ RATE_LIMIT: '1' }, { clock: addressClock });
    await limitedGateway.seed({ users: [{ id: 6, username: 'user6', quota: 6 }] });
  });

  afterAll(() => limitedGateway?.stop());

  it('answers a flood from one address 429 before looking credentials up, in each endpoint’s shape', async () => {
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
    // The clock stands still during the flood, however long the machine takes to send it: exactly
    // the address's 30 are let through (and refused for their key), the other 270 are limited.
    expect(countOf(answers, 401)).toBe(ADDRESS_SERVED);
    expect(countOf(answers, 429)).toBe(FLOOD - ADDRESS_SERVED);
    // Only the requests let through cost a lookup of the key.
    expect(commands.length).toBe(ADDRESS_SERVED);
    answers.forEach((answer, index) => {
      if (answer.status !== 429) return;
      expectRetryAfter(answer);
      shapes[index % shapes.length]![1](answer);
    });
  });

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
