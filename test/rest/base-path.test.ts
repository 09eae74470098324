import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ManualClock } from '../support/clock.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { addressRate, servedAtOnce } from '../support/rate-limits.js';
import { startTestSidecar, type TestSidecar } from '../support/sidecar.js';

const ALICE = 1;
const BASE = '/api';

const seed = {
  users: [{ id: ALICE, username: 'alice', quota: 12.5 }],
  conversations: [1, 2, 3].map((id) => ({ userId: ALICE, id, name: `Chat ${id}`, model: 'gpt-4o', enableWeb: false, messages: [] })),
};

interface Answer {
  status: number;
  text: string;
  headers: Headers;
}

/** The legacy web client's default: every endpoint under `/api`, as well as at the root. */
describe.each(['in-process', 'sidecar'] as const)('REST_BASE_PATH=/api (%s)', (mode) => {
  let gateway: TestGateway;
  let sidecar: TestSidecar | undefined;
  let base: string;
  let token: string;

  beforeAll(async () => {
    gateway = await startTestGateway(mode === 'in-process' ? { REST_BASE_PATH: BASE } : {});
    await gateway.seed(seed);
    if (mode === 'sidecar') sidecar = await startTestSidecar(`${gateway.url}/graphql`, { basePath: BASE });
    base = sidecar?.url ?? gateway.url;
    token = await gateway.token(ALICE);
  });

  afterAll(async () => {
    await sidecar?.stop();
    await gateway?.stop();
  });

  async function call(path: string, init: { method?: string; body?: string; authorized?: boolean } = {}): Promise<Answer> {
    const response = await fetch(`${base}${path}`, {
      method: init.method ?? 'GET',
      headers: init.authorized === false ? {} : { authorization: token },
      body: init.body,
    });
    return { status: response.status, text: await response.text(), headers: response.headers };
  }

  it('answers every endpoint under the base path exactly as at the root', async () => {
    for (const path of [
      '/conversation/list',
      '/conversation/load?id=2',
      '/conversation/load?id=9',
      '/conversation/load?id=x',
      '/quota',
      '/package',
    ]) {
      const [prefixed, root] = [await call(`${BASE}${path}`), await call(path)];
      expect({ status: prefixed.status, text: prefixed.text }, path).toEqual({ status: root.status, text: root.text });
      expect(prefixed.status).toBe(200);
    }
    const buy = await call(`${BASE}/buy`, { method: 'POST', body: '{"quota":10}' });
    expect(buy.text).toBe('{"status":false,"error":"not available on this deployment"}');
  });

  it('renames and cleans under the base path', async () => {
    expect((await call(`${BASE}/conversation/rename`, { method: 'POST', body: '{"id":3,"name":"Renamed"}' })).text).toBe(
      '{"status":true,"message":""}',
    );
    expect(JSON.parse((await call('/conversation/load?id=3')).text).data.name).toBe('Renamed');
    expect((await call(`${BASE}/conversation/rename`, { method: 'POST', body: '{"id":3,"name":" "}' })).text).toBe(
      '{"status":false,"message":"invalid name"}',
    );
    expect((await call(`${BASE}/conversation/delete?id=1`)).text).toBe('{"status":true}');
    const head = await call(`${BASE}/conversation/clean`, { method: 'HEAD' });
    expect({ status: head.status, allow: head.headers.get('allow') }).toEqual({ status: 405, allow: 'GET' });
    expect(JSON.parse((await call('/conversation/list')).text).data).toHaveLength(2);
    expect((await call(`${BASE}/conversation/clean`)).text).toBe('{"status":true,"message":""}');
    expect((await call('/conversation/list')).text).toBe('{"status":true,"message":"","data":[]}');
  });

  it('answers failures under the base path in each endpoint’s shape', async () => {
    const unauthorized = await call(`${BASE}/quota`, { authorized: false });
    expect({ status: unauthorized.status, text: unauthorized.text }).toEqual({
      status: 401,
      text: '{"status":false,"error":"unauthorized"}',
    });
    const list = await call(`${BASE}/conversation/list`, { method: 'POST', body: '{}' });
    expect({ status: list.status, allow: list.headers.get('allow'), text: list.text }).toEqual({
      status: 405,
      allow: 'GET',
      text: '{"status":false,"message":"method not allowed; use GET"}',
    });
    const buy = await call(`${BASE}/buy`);
    expect({ status: buy.status, allow: buy.headers.get('allow'), text: buy.text }).toEqual({
      status: 405,
      allow: 'POST',
      text: '{"status":false,"error":"method not allowed; use POST"}',
    });
    const tooLarge = await call(`${BASE}/conversation/rename`, {
      method: 'POST',
      body: JSON.stringify({ id: 1, name: 'x'.repeat(200 * 1024) }),
    });
    expect({ status: tooLarge.status, text: tooLarge.text }).toEqual({
      status: 413,
      text: '{"status":false,"message":"request body too large"}',
    });
  });

  it('answers 404 JSON for paths under the base path that name no endpoint', async () => {
    for (const path of [`${BASE}/nowhere`, BASE, `${BASE}/graphql`, `${BASE}${BASE}/quota`]) {
      const answer = await call(path);
      expect({ status: answer.status, text: answer.text }, path).toEqual({
        status: 404,
        text: JSON.stringify({ status: false, error: `no such endpoint: GET ${path}` }),
      });
    }
  });
});

describe('the base path elsewhere', () => {
  it('is not served when REST_BASE_PATH is unset', async () => {
    const gateway = await startTestGateway();
    try {
      const response = await fetch(`${gateway.url}${BASE}/conversation/list`, { headers: { authorization: await gateway.token(ALICE) } });
      expect(response.status).toBe(404);
    } finally {
      await gateway.stop();
    }
  });

  it('is named in OpenAPI as a second server, and a refusal made before routing (the per-address limit) has the endpoint’s shape', async () => {
    const gateway = await startTestGateway({ REST_BASE_PATH: BASE, RATE_LIMIT: '1' }, { clock: new ManualClock() });
    try {
      const document = (await (await fetch(`${gateway.url}/openapi.json`)).json()) as { servers: { url: string }[] };
      expect(document.servers.map((server) => server.url)).toEqual(['/', BASE]);
      // On a clock that stands still, one more than an address's counter lets through at once.
      const count = servedAtOnce(addressRate(1)) + 1;
      const answers = await Promise.all(Array.from({ length: count }, () => fetch(`${gateway.url}${BASE}/conversation/list`)));
      const refused = answers.find((answer) => answer.status === 429);
      expect(await refused?.text()).toBe('{"status":false,"message":"too many requests"}');
    } finally {
      await gateway.stop();
    }
  });
});
