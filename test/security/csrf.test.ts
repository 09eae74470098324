import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { json, send } from './http.js';

const ALICE = 1;
const DELETE_ONE = 'mutation { deleteConversationByNumber(number: 1) { ok } }';

let gateway: TestGateway;
let token: string;

beforeAll(async () => {
  gateway = await startTestGateway();
  await gateway.seed({
    users: [{ id: ALICE, username: 'alice', quota: 12.5 }],
    conversations: [{ userId: ALICE, id: 1, name: 'Trip plan', model: 'gpt-4o', messages: [] }],
  });
  token = await gateway.token(ALICE);
});

afterAll(() => gateway?.stop());

async function conversationStillThere(): Promise<boolean> {
  const answer = await send(gateway.url, { path: '/conversation/load?id=1', headers: { authorization: token } });
  return json(answer).status === true;
}

describe('cross-site requests cannot run a mutation on /graphql, even with valid credentials', () => {
  const simpleBodies: [string, string, string][] = [
    ['text/plain', 'text/plain', JSON.stringify({ query: DELETE_ONE })],
    ['a form', 'application/x-www-form-urlencoded', `query=${encodeURIComponent(DELETE_ONE)}`],
    [
      'multipart form data',
      'multipart/form-data; boundary=X',
      `--X\r\nContent-Disposition: form-data; name="query"\r\n\r\n${DELETE_ONE}\r\n--X--\r\n`,
    ],
    ['no content type', '', JSON.stringify({ query: DELETE_ONE })],
  ];

  for (const [name, contentType, body] of simpleBodies) {
    it(`refuses a POST of ${name} with 400`, async () => {
      const commands = await gateway.commandsDuring(async () => {
        const answer = await send(gateway.url, {
          method: 'POST',
          path: '/graphql',
          headers: { authorization: `Bearer ${token}`, ...(contentType ? { 'content-type': contentType } : {}) },
          body,
        });
        expect(answer.status).toBe(400);
        expect(answer.text).toMatch(/Cross-Site Request Forgery/);
      });
      expect(commands).toEqual([]);
      expect(await conversationStillThere()).toBe(true);
    });
  }

  it('refuses a GET mutation with 405, with or without a preflight header', async () => {
    const path = `/graphql?query=${encodeURIComponent(DELETE_ONE)}`;
    for (const extra of [{}, { 'apollo-require-preflight': 'true' }] as Record<string, string>[]) {
      const answer = await send(gateway.url, { path, headers: { authorization: `Bearer ${token}`, ...extra } });
      expect(answer.status).toBe(405);
      expect(answer.headers.allow).toBe('POST');
    }
    expect(await conversationStillThere()).toBe(true);
  });

  it('answers a GET query that carries only the Authorization header (which itself forces a browser preflight)', async () => {
    const answer = await send(gateway.url, {
      path: `/graphql?query=${encodeURIComponent('{ quota }')}`,
      headers: { authorization: `Bearer ${token}` },
    });
    expect(answer.status).toBe(200);
    expect(json(answer)).toEqual({ data: { quota: 12.5 } });
  });
});

describe('credentials come only from the Authorization header', () => {
  const cookies = (value: string) =>
    [`token=${value}`, `authorization=${value}`, `Authorization=Bearer%20${value}`, `session=${value}`].join('; ');

  it('ignores a cookie carrying a valid token on the state-changing GET /conversation/delete', async () => {
    const answer = await send(gateway.url, { path: '/conversation/delete?id=1', headers: { cookie: cookies(token) } });
    expect(answer.status).toBe(401);
    expect(json(answer)).toEqual({ status: false, message: 'unauthorized' });
    expect(await conversationStillThere()).toBe(true);
  });

  it('ignores a cookie carrying a valid token on /graphql', async () => {
    const answer = await send(gateway.url, {
      method: 'POST',
      path: '/graphql',
      headers: { cookie: cookies(token), 'content-type': 'application/json' },
      body: JSON.stringify({ query: DELETE_ONE }),
    });
    expect(answer.status).toBe(401);
    expect(json(answer).errors[0].extensions.code).toBe('UNAUTHENTICATED');
    expect(await conversationStillThere()).toBe(true);
  });

  it('ignores a token in the query string', async () => {
    for (const name of ['token', 'access_token', 'authorization']) {
      const answer = await send(gateway.url, { path: `/conversation/delete?id=1&${name}=${token}` });
      expect(answer.status).toBe(401);
    }
    expect(await conversationStillThere()).toBe(true);
  });

  it('sets no cookie on any answer', async () => {
    for (const path of ['/conversation/list', '/quota', '/nowhere']) {
      const answer = await send(gateway.url, { path, headers: { authorization: token } });
      expect(answer.headers['set-cookie']).toBeUndefined();
    }
  });
});
