import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { graphql, startTestGateway, type TestGateway } from '../support/gateway.js';
import { startTestSidecar, type TestSidecar } from '../support/sidecar.js';
import { type RawAnswer, send } from './http.js';

const ALICE = 1;

/** Both the built-in REST layer and the sidecar in front of a gateway. */
describe.each(['in-process', 'sidecar'] as const)('answers to authenticated callers (%s)', (mode) => {
  let gateway: TestGateway;
  let sidecar: TestSidecar | undefined;
  let base: string;
  let authorization: string;

  beforeAll(async () => {
    gateway = await startTestGateway({ RATE_LIMIT: '2' });
    await gateway.seed({
      users: [{ id: ALICE, username: 'alice', quota: 12.5 }],
      conversations: [1, 2].map((id) => ({ userId: ALICE, id, name: `Conversation ${id}`, model: 'gpt-4o', messages: [] })),
    });
    if (mode === 'sidecar') sidecar = await startTestSidecar(`${gateway.url}/graphql`);
    base = sidecar?.url ?? gateway.url;
    authorization = `Bearer ${await gateway.token(ALICE)}`;
  });
  afterAll(async () => {
    await sidecar?.stop();
    await gateway?.stop();
  });

  const conversationIds = async () =>
    (await graphql(gateway, '{ conversations { nodes { number } } }', { authorization })).body.data!.conversations.nodes.map(
      (node: { number: number }) => node.number,
    );

  it('HEAD never deletes: /conversation/delete answers 405 with Allow: GET and the conversation stays', async () => {
    const answer = await send(base, { method: 'HEAD', path: '/conversation/delete?id=1', headers: { authorization } });
    expect(answer.status).toBe(405);
    expect(answer.headers.allow).toBe('GET');
    expect(await conversationIds()).toEqual([2, 1]);
  });

  it('HEAD never claims the gift package: /package answers 405', async () => {
    const answer = await send(base, { method: 'HEAD', path: '/package', headers: { authorization } });
    expect(answer.status).toBe(405);
    expect(answer.headers.allow).toBe('GET');
  });

  it('HEAD of an endpoint that only reads answers as GET would, without a body', async () => {
    const answer = await send(base, { method: 'HEAD', path: '/conversation/list', headers: { authorization } });
    expect(answer.status).toBe(200);
    expect(answer.text).toBe('');
    expect(answer.headers['cache-control']).toBe('no-store');
  });

  it('carries Cache-Control: no-store on every REST answer after authentication, failures included', async () => {
    const answers: RawAnswer[] = [];
    for (const path of [
      '/conversation/list',
      '/conversation/load?id=1',
      '/conversation/load?id=99',
      '/conversation/load?id=x',
      '/quota',
      '/package',
    ]) {
      answers.push(await send(base, { path, headers: { authorization } }));
    }
    answers.push(
      await send(base, { method: 'POST', path: '/buy', headers: { authorization, 'content-type': 'application/json' }, body: '{' }),
    );
    // Over the caller's rate limit (2 a second, a burst of 4): 429 after authentication.
    const flood = await Promise.all(Array.from({ length: 12 }, () => send(base, { path: '/quota', headers: { authorization } })));
    expect(flood.some((answer) => answer.status === 429)).toBe(true);
    for (const answer of [...answers, ...flood]) expect(answer.headers['cache-control'], answer.text).toBe('no-store');
  });
});

describe('/graphql answers to authenticated callers', () => {
  let gateway: TestGateway;
  let authorization: string;

  beforeAll(async () => {
    gateway = await startTestGateway();
    await gateway.seed({
      users: [{ id: ALICE, username: 'alice', quota: 12.5 }],
      conversations: [{ userId: ALICE, id: 1, name: 'Trip', model: 'gpt-4o', messages: [] }],
    });
    authorization = `Bearer ${await gateway.token(ALICE)}`;
  });
  afterAll(() => gateway?.stop());

  it('carry Cache-Control: no-store, on success and on failure, over POST and GET', async () => {
    const answers = [
      await graphql(gateway, '{ quota }', { authorization }),
      await graphql(gateway, '{ noSuchField }', { authorization }),
      await graphql(gateway, '{ conversation(number: 1) { name } }', { authorization }),
    ];
    const get = await fetch(`${gateway.url}/graphql?query=${encodeURIComponent('{ quota }')}`, { headers: { authorization } });
    expect(answers.map((answer) => answer.status)).toEqual([200, 400, 200]);
    for (const headers of [...answers.map((answer) => answer.headers), get.headers]) expect(headers.get('cache-control')).toBe('no-store');
  });

  it('HEAD never runs an operation: a mutation sent with HEAD deletes nothing', async () => {
    const mutation = encodeURIComponent('mutation { deleteConversationByNumber(number: 1) { ok } }');
    const answer = await send(gateway.url, { method: 'HEAD', path: `/graphql?query=${mutation}`, headers: { authorization } });
    // Apollo Server runs operations for GET and POST only.
    expect(answer.status).toBeGreaterThanOrEqual(400);
    expect(answer.status).toBeLessThan(500);
    const stored = await graphql(gateway, '{ conversation(number: 1) { number } }', { authorization });
    expect(stored.body.data).toEqual({ conversation: { number: 1 } });
  });
});
