import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { json, postGraphql, send } from './http.js';

let gateway: TestGateway;
let authorization: string;

beforeAll(async () => {
  gateway = await startTestGateway();
  await gateway.seed({ users: [{ id: 1, username: 'alice', quota: 12.5 }] });
  authorization = `Bearer ${await gateway.token(1)}`;
});

afterAll(() => gateway?.stop());

const HUNDRED_KB = 100 * 1024;

describe('request bodies', () => {
  it('answers a /graphql body over 100 kB with 413 and a JSON GraphQL error', async () => {
    const body = JSON.stringify({ query: '{ quota }', variables: { padding: 'x'.repeat(HUNDRED_KB) } });
    const answer = await postGraphql(gateway.url, body, { authorization });
    expect(answer.status).toBe(413);
    expect(answer.headers['content-type']).toMatch(/^application\/json/);
    expect(json(answer)).toEqual({
      errors: [{ message: `request body is larger than the limit of ${HUNDRED_KB} bytes`, extensions: { code: 'BAD_REQUEST' } }],
    });
  });

  it('answers a /graphql body just under 100 kB', async () => {
    const body = JSON.stringify({ query: '{ quota }', variables: { padding: 'x'.repeat(HUNDRED_KB - 100) } });
    const answer = await postGraphql(gateway.url, body, { authorization });
    expect(answer.status).toBe(200);
    expect(json(answer)).toEqual({ data: { quota: 12.5 } });
  });

  for (const [name, body] of [
    ['a truncated object', '{"query": "{ quota }"'],
    ['a bare word', 'quota'],
    ['a NUL byte', '{"query":"{ quota }"}\u0000'],
  ] as const) {
    it(`answers malformed JSON on /graphql (${name}) with 400 and a JSON GraphQL error`, async () => {
      const answer = await postGraphql(gateway.url, body, { authorization });
      expect(answer.status).toBe(400);
      expect(json(answer)).toEqual({ errors: [{ message: 'request body is not valid JSON', extensions: { code: 'BAD_REQUEST' } }] });
    });
  }

  it('answers a body in an unsupported charset on /graphql with a 4xx GraphQL error', async () => {
    const answer = await postGraphql(gateway.url, '{"query":"{ quota }"}', {
      authorization,
      headers: { 'content-type': 'application/json; charset=klingon' },
    });
    expect(answer.status).toBe(415);
    expect(json(answer).errors[0].extensions.code).toBe('BAD_REQUEST');
  });

  it('answers malformed JSON on /buy with status:false, like every other bad input there', async () => {
    const answer = await send(gateway.url, {
      method: 'POST',
      path: '/buy',
      headers: { authorization, 'content-type': 'application/json' },
      body: '{"quota": 1',
    });
    expect(answer.status).toBe(200);
    expect(json(answer)).toEqual({ status: false, error: 'request body is not valid JSON' });
  });

  it('answers a /buy body over 100 kB with 413 in the endpoint’s shape', async () => {
    const answer = await send(gateway.url, {
      method: 'POST',
      path: '/buy',
      headers: { authorization, 'content-type': 'application/json' },
      body: JSON.stringify({ quota: 1, padding: 'x'.repeat(HUNDRED_KB) }),
    });
    expect(answer.status).toBe(413);
    expect(json(answer)).toEqual({ status: false, error: 'request body too large' });
  });
});

describe('request headers', () => {
  it('refuses headers over 16 KB with 431 and keeps serving', async () => {
    const answer = await send(gateway.url, { path: '/quota', headers: { authorization, 'x-padding': 'x'.repeat(17 * 1024) } });
    expect(answer.status).toBe(431);
    const next = await send(gateway.url, { path: '/quota', headers: { authorization } });
    expect(json(next)).toEqual({ status: true, quota: 12.5 });
  });

  it('accepts headers just under 16 KB', async () => {
    const answer = await send(gateway.url, { path: '/quota', headers: { authorization, 'x-padding': 'x'.repeat(15 * 1024) } });
    expect(answer.status).toBe(200);
  });
});

describe('response headers', () => {
  const requests: [string, Parameters<typeof send>[1]][] = [
    ['/graphql', { method: 'POST', path: '/graphql', headers: { 'content-type': 'application/json' }, body: '{"query":"{ quota }"}' }],
    ['a REST endpoint', { path: '/quota' }],
    ['a refused credential', { path: '/conversation/list', headers: { authorization: 'garbage' } }],
    ['an unknown path', { path: '/nowhere' }],
    ['the health probe', { path: '/healthz' }],
    ['the OpenAPI document', { path: '/openapi.json' }],
  ];

  for (const [name, request] of requests) {
    it(`sets helmet's headers and no X-Powered-By on ${name}`, async () => {
      const answer = await send(gateway.url, {
        ...request,
        headers: { authorization, ...request.headers },
      });
      expect(answer.headers['x-powered-by']).toBeUndefined();
      expect(answer.headers['x-content-type-options']).toBe('nosniff');
      expect(answer.headers['x-frame-options']).toBe('DENY');
      expect(answer.headers['strict-transport-security']).toMatch(/max-age=\d+/);
      expect(answer.headers['referrer-policy']).toBe('no-referrer');
      expect(answer.headers['cross-origin-opener-policy']).toBe('same-origin');
      const csp = answer.headers['content-security-policy'];
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toContain('upgrade-insecure-requests');
    });
  }

  it('leaves the playground page the policy it sets itself, and serves every asset it names', async () => {
    const api = await send(gateway.url, { path: '/healthz' });
    const answer = await send(gateway.url, { path: '/graphql', headers: { accept: 'text/html' } });
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toMatch(/^text\/html/);
    const csp = answer.headers['content-security-policy'];
    expect(typeof csp).toBe('string');
    expect(csp).not.toBe(api.headers['content-security-policy']);
    expect(answer.headers['x-powered-by']).toBeUndefined();
    const assets = [...answer.text.matchAll(/(?:src|href)="(\/[^"]+)"/g)].map((match) => match[1]!);
    expect(assets.length).toBeGreaterThan(0);
    for (const asset of assets) expect((await send(gateway.url, { path: asset })).status, asset).toBe(200);
  });
});
