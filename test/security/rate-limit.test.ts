import { setTimeout as sleep } from 'node:timers/promises';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startTestGateway, type TestGateway } from '../support/gateway.js';
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
  it('answers a caller over its rate 429 with Retry-After and code RATE_LIMITED on /graphql', async () => {
    const answers = await flood(40, graphqlRequest(1, address(10)));
    const served = answers.filter((answer) => answer.status === 200);
    const limited = answers.filter((answer) => answer.status === 429);
    expect(served.length + limited.length).toBe(40);
    // 5 a second and a burst of 10; on a busy machine more windows may open while the flood is under way.
    expect(served.length).toBeGreaterThanOrEqual(RATE);
    expect(served.length).toBeLessThanOrEqual(RATE * 6);
    expect(limited.length).toBeGreaterThan(0);
    for (const answer of limited) {
      const retryAfter = expectRetryAfter(answer);
      expect(answer.headers['content-type']).toMatch(/^application\/json/);
      expect(json(answer)).toEqual({ errors: [{ message: 'too many requests', extensions: { code: 'RATE_LIMITED', retryAfter } }] });
    }
  });

  it('serves the caller again once Retry-After has passed', async () => {
    const answers = await flood(30, graphqlRequest(2, address(11)));
    const limited = answers.find((answer) => answer.status === 429)!;
    await sleep(expectRetryAfter(limited) * 1_000 + 100);
    const again = await send(gateway.url, graphqlRequest(2, address(11)));
    expect(again.status).toBe(200);
    expect(json(again)).toEqual({ data: { quota: 2 } });
  });

  it('keeps serving another caller, from the same address, while one caller floods', async () => {
    const floodA = flood(60, graphqlRequest(3, address(12)));
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
    it(`answers 429 with Retry-After and {"status":false,"${field}":…} on ${method} ${path}`, async () => {
      const answers = await flood(30, {
        method,
        path,
        headers: { authorization: tokens.get(user)!, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body } : {}),
        localAddress: address(20 + index),
      });
      const limited = answers.filter((answer) => answer.status === 429);
      expect(limited.length).toBeGreaterThan(0);
      for (const answer of limited) {
        expectRetryAfter(answer);
        expect(answer.text).toBe(`{"status":false,"${field}":"too many requests"}`);
      }
      expect(answers.every((answer) => answer.status === 200 || answer.status === 429)).toBe(true);
    });
  });

  it('answers 429 with Retry-After in the endpoint’s shape through the sidecar, which the gateway limits', async () => {
    const sidecar = await startTestSidecar(`${gateway.url}/graphql`);
    try {
      const answers = await Promise.all(
        Array.from({ length: 30 }, () => send(sidecar.url, { path: '/quota', headers: { authorization: tokens.get(7)! } })),
      );
      const limited = answers.filter((answer) => answer.status === 429);
      expect(limited.length).toBeGreaterThan(0);
      for (const answer of limited) {
        expectRetryAfter(answer);
        expect(answer.text).toBe('{"status":false,"error":"too many requests"}');
      }
      expect(answers.every((answer) => answer.status === 200 || answer.status === 429)).toBe(true);
    } finally {
      await sidecar.stop();
    }
  });

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
  it('answers a flood from one address 429 before looking credentials up, in each endpoint’s shape', async () => {
    const key = 'sk-not-a-key-0123456789abcdef';
    const shapes: [RawRequest, (answer: RawAnswer) => void][] = [
      [{ path: '/conversation/list' }, (answer) => expect(answer.text).toBe('{"status":false,"message":"too many requests"}')],
      [{ path: '/quota' }, (answer) => expect(answer.text).toBe('{"status":false,"error":"too many requests"}')],
      [graphqlRequest(undefined, address(40)), (answer) => expect(json(answer).errors[0].extensions.code).toBe('RATE_LIMITED')],
    ];
    let answers: RawAnswer[] = [];
    const commands = await gateway.commandsDuring(async () => {
      answers = await Promise.all(
        Array.from({ length: 300 }, (_, index) => {
          const [request] = shapes[index % shapes.length]!;
          return send(gateway.url, { ...request, headers: { ...request.headers, authorization: key }, localAddress: address(40) });
        }),
      );
    });
    const refused = answers.filter((answer) => answer.status === 401);
    const limited = answers.filter((answer) => answer.status === 429);
    expect(refused.length + limited.length).toBe(300);
    expect(limited.length).toBeGreaterThan(0);
    // Only the requests let through cost a lookup of the key.
    expect(commands.length).toBe(refused.length);
    answers.forEach((answer, index) => {
      if (answer.status !== 429) return;
      expectRetryAfter(answer);
      shapes[index % shapes.length]![1](answer);
    });
  });

  it('keeps serving other addresses meanwhile', async () => {
    const answer = await send(gateway.url, graphqlRequest(6, address(41)));
    expect(answer.status).toBe(200);
  });

  it('does not limit the health probes', async () => {
    const answers = await flood(300, { path: '/healthz', localAddress: address(42) });
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
