import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { secretKey, signAccessToken } from '../../src/auth/access-token.js';
import { loadSeed } from '../../src/seed/seed-file.js';
import { startGatewayWithCapturedLog } from '../support/captured-log.js';
import { graphql, TEST_JWT_SECRET } from '../support/gateway.js';

const API_KEY = 'sk-alice-log-test-0123456789';
const SECRET_CONTENT = 'my-very-private-message-content';
const SECRET_NAME = 'private-conversation-title';

let gateway: Awaited<ReturnType<typeof startGatewayWithCapturedLog>>;
let token: string;

beforeAll(async () => {
  gateway = await startGatewayWithCapturedLog();
  await loadSeed(gateway.domains, {
    users: [{ id: 7, username: 'alice', quota: 3, apiKeys: [API_KEY] }],
    conversations: [
      { userId: 7, id: 1, name: SECRET_NAME, model: 'gpt-4o', enableWeb: false, messages: [{ role: 'user', content: SECRET_CONTENT }] },
    ],
  });
  token = await signAccessToken(secretKey(TEST_JWT_SECRET), 7);
});
afterAll(() => gateway?.stop());

/** The request log line for the response's X-Request-Id. */
function lineFor(response: { headers: Headers }): Record<string, unknown> | undefined {
  const requestId = response.headers.get('x-request-id');
  return gateway.log.lines().find((line) => line.msg === 'request' && line.requestId === requestId);
}

describe('the request log', () => {
  it('writes one JSON line per REST request with its id, caller, route, status and duration', async () => {
    const response = await fetch(`${gateway.url}/conversation/load?id=1`, {
      headers: { authorization: `Bearer ${token}`, 'x-request-id': 'trace-rest-1' },
    });
    expect(response.status).toBe(200);
    const lines = gateway.log.lines().filter((line) => line.requestId === 'trace-rest-1');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 30, msg: 'request', method: 'GET', route: '/conversation/load', status: 200, userId: 7 });
    expect(lines[0]!.durationMs).toEqual(expect.any(Number));
  });

  it('names the GraphQL operation of a /graphql request, and its caller', async () => {
    const response = await graphql(gateway, 'query MyConversations { conversations { nodes { messages { content } } } }', {
      authorization: `Bearer ${token}`,
    });
    expect(response.status).toBe(200);
    expect(lineFor(response)).toMatchObject({ route: '/graphql', operation: 'MyConversations', status: 200, userId: 7 });
  });

  it('cuts an operation name a caller made long to 64 characters, so no request grows a line without bound', async () => {
    const name = `Long${'x'.repeat(50_000)}`;
    const response = await graphql(gateway, `query ${name} { quota }`, { authorization: `Bearer ${token}` });
    expect(response.status).toBe(200);
    const line = lineFor(response)!;
    expect(line.operation).toBe(`${name.slice(0, 63)}…`);
    expect(JSON.stringify(line).length).toBeLessThan(1_000);
  });

  it('logs refused credentials without a caller', async () => {
    const response = await fetch(`${gateway.url}/quota`, { headers: { authorization: 'Bearer forged.token.value' } });
    expect(response.status).toBe(401);
    const line = lineFor(response);
    expect(line).toMatchObject({ route: '/quota', status: 401 });
    expect(line).not.toHaveProperty('userId');
  });

  it('names each request after the route it matched, however the client spelled the path', async () => {
    const graphqlAnswer = await fetch(`${gateway.url}/GraphQL`, {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json' },
    });
    expect(lineFor(graphqlAnswer)).toMatchObject({ method: 'POST', route: '/graphql', status: 401 });
    const methodAnswer = await fetch(`${gateway.url}/GRAPHQL/`, { method: 'PUT' });
    expect(lineFor(methodAnswer)).toMatchObject({ method: 'PUT', route: '/graphql', status: 405 });
    const restAnswer = await fetch(`${gateway.url}/QuOtA`, { headers: { authorization: `Bearer ${token}` } });
    expect(lineFor(restAnswer)).toMatchObject({ method: 'GET', route: '/quota', status: 200, userId: 7 });
  });

  it('never contains credentials or conversation contents', async () => {
    const authorizations = [`Bearer ${token}`, token, API_KEY, 'Bearer forged.token.value'];
    for (const authorization of authorizations) {
      await fetch(`${gateway.url}/conversation/load?id=1`, { headers: { authorization } });
      await graphql(gateway, '{ conversation(number: 1) { name messages { role content } } }', { authorization });
      await fetch(`${gateway.url}/conversation/delete`, { method: 'POST', headers: { authorization }, body: `{"id":"${SECRET_CONTENT}"}` });
    }
    await graphql(gateway, `{ conversation(number: "${SECRET_CONTENT}") { name } }`, { authorization: `Bearer ${token}` });

    const text = gateway.log.text();
    expect(gateway.log.lines().length).toBeGreaterThanOrEqual(authorizations.length * 3);
    for (const secret of [token, API_KEY, 'forged.token.value', SECRET_CONTENT, SECRET_NAME, 'authorization']) {
      expect(text.toLowerCase()).not.toContain(secret.toLowerCase());
    }
  });
});
