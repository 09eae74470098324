import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { RunningSidecar } from '../../src/rest/sidecar.js';
import { graphql, startTestGateway, type TestGateway } from '../support/gateway.js';
import { startTestSidecar } from '../support/sidecar.js';

/**
 * Names as Chat Nio stores them: its rename takes any text, the empty string included, and it names
 * a conversation after its first message, so a real database holds empty and blank names (its
 * column is VARCHAR(255)). What is stored is served as it is; only a rename, new input, refuses them.
 */
const USER = 1;
const NAMES = ['', ' ', '\t\n ', '\u3000', 'n'.repeat(255), '名'.repeat(255)];

let gateway: TestGateway;
let sidecar: RunningSidecar;
let token: string;

beforeAll(async () => {
  gateway = await startTestGateway();
  await gateway.seed({
    users: [{ id: USER, username: 'nio', quota: 0 }],
    conversations: NAMES.map((name, index) => ({
      userId: USER,
      id: index + 1,
      name,
      model: 'gpt-4o',
      enableWeb: false,
      messages: [{ role: 'user', content: `hello ${index + 1}` }],
    })),
  });
  sidecar = await startTestSidecar(`${gateway.url}/graphql`);
  token = await gateway.token(USER);
});
afterAll(async () => {
  await sidecar?.stop();
  await gateway?.stop();
});

async function legacy(base: { url: string }, path: string, body?: unknown): Promise<string> {
  const response = await fetch(`${base.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: token, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(response.status).toBe(200);
  return response.text();
}

describe.each(['in-process', 'sidecar'] as const)('stored names, empty and blank included, over REST (%s)', (mode) => {
  const base = () => (mode === 'sidecar' ? sidecar : gateway);

  it('lists them byte for byte', async () => {
    const data = NAMES.map((name, index) => ({
      id: index + 1,
      user_id: USER,
      name,
      message: null,
      model: 'gpt-4o',
      enable_web: false,
    })).reverse();
    const text = await legacy(base(), '/conversation/list');
    expect(text).toBe(JSON.stringify({ status: true, message: '', data }));
    expect(text).toContain('"name":""');
  });

  it('loads each byte for byte', async () => {
    for (const [index, name] of NAMES.entries()) {
      const id = index + 1;
      const expected = {
        status: true,
        message: 'success',
        data: { id, user_id: USER, name, message: [{ role: 'user', content: `hello ${id}` }], model: 'gpt-4o', enable_web: false },
      };
      expect(await legacy(base(), `/conversation/load?id=${id}`)).toBe(JSON.stringify(expected));
    }
    expect(await legacy(base(), '/conversation/load?id=1')).toMatch(
      /^\{"status":true,"message":"success","data":\{"id":1,"user_id":1,"name":"",/,
    );
  });

  it('still refuses to rename one to an empty or blank name, keeping the name stored', async () => {
    for (const name of ['', ' ', '\t\n ']) {
      expect(await legacy(base(), '/conversation/rename', { id: 5, name })).toBe('{"status":false,"message":"invalid name"}');
    }
    expect(JSON.parse(await legacy(base(), '/conversation/load?id=5')).data.name).toBe('n'.repeat(255));
  });
});

describe('stored names over GraphQL', () => {
  it('answers them as stored, in pages and looked up', async () => {
    const page = await graphql(gateway, '{ conversations { nodes { number name } } }', { authorization: `Bearer ${token}` });
    expect(page.body).toEqual({
      data: { conversations: { nodes: NAMES.map((name, index) => ({ number: index + 1, name })).reverse() } },
    });
    const one = await fetch(`${gateway.url}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ conversation(number: 1) { name } }' }),
    });
    // Apollo Server ends its answers with a newline.
    expect(await one.text()).toBe('{"data":{"conversation":{"name":""}}}\n');
  });

  it('refuses a rename to an empty or blank name as invalid input', async () => {
    const answer = await graphql(
      gateway,
      'mutation { a: renameConversationByNumber(number: 6, name: "") { ok error { code } } b: renameConversationByNumber(number: 6, name: "  ") { ok error { code } } }',
      { authorization: `Bearer ${token}` },
    );
    expect(answer.body).toEqual({
      data: { a: { ok: false, error: { code: 'INVALID_INPUT' } }, b: { ok: false, error: { code: 'INVALID_INPUT' } } },
    });
  });
});
