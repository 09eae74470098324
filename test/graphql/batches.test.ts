import { ApolloClient, gql, InMemoryCache } from '@apollo/client';
import { BatchHttpLink } from '@apollo/client/link/batch-http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { json, postGraphql } from '../security/http.js';
import { ManualClock } from '../support/clock.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { sample, scrapeMetrics } from '../support/metrics.js';

const ALICE = 1;
const BOB = 2;
/** 40 000 bytes of message content: one such conversation fits in RESPONSE_MAX_BYTES (65 536 here), two do not. */
const LONG = 'x'.repeat(40_000);
const SEED = {
  users: [
    { id: ALICE, username: 'alice', quota: 12.5 },
    { id: BOB, username: 'bob', quota: 3 },
  ],
  conversations: [
    { userId: ALICE, id: 1, name: 'Trip plan', model: 'gpt-4o', messages: [{ role: 'user', content: LONG }] },
    { userId: ALICE, id: 2, name: 'Recipes', model: 'gpt-4o', messages: [{ role: 'user', content: LONG }] },
    { userId: BOB, id: 1, name: 'Bob’s', model: 'gpt-4o', messages: [] },
  ],
};

let gateway: TestGateway;
/** RATE_LIMIT=1 (3 requests at once, with its burst) and GRAPHQL_BATCH_MAX=4: a batch within the maximum can still be over the rate. */
let limited: TestGateway;
/** GRAPHQL_BATCH_MAX=1. */
let single: TestGateway;
let alice: string;

beforeAll(async () => {
  gateway = await startTestGateway({ RESPONSE_MAX_BYTES: '65536' });
  [limited, single] = await Promise.all([
    // On a clock that stands still, so that no second passes between a batch's operations on a slow machine.
    startTestGateway({ RATE_LIMIT: '1', GRAPHQL_BATCH_MAX: '4' }, { database: gateway.testDatabase, clock: new ManualClock() }),
    startTestGateway({ GRAPHQL_BATCH_MAX: '1' }, { database: gateway.testDatabase }),
  ]);
  await gateway.seed(SEED);
  alice = `Bearer ${await gateway.token(ALICE)}`;
});
afterAll(async () => {
  await Promise.all([limited?.stop(), single?.stop()]);
  await gateway?.stop();
});

const rename = (name: string) => ({
  query: 'mutation Rename($id: ID!, $name: String!) { renameConversation(id: $id, name: $name) { ok } }',
  variables: { id: 'placeholder', name },
});

async function conversationName(number: number, authorization = alice): Promise<string> {
  const answer = await postGraphql(gateway.url, { query: `{ conversation(number: ${number}) { name } }` }, { authorization });
  return json(answer).data.conversation.name;
}

async function globalIdOf(number: number): Promise<string> {
  const answer = await postGraphql(gateway.url, { query: `{ conversation(number: ${number}) { id } }` }, { authorization: alice });
  return json(answer).data.conversation.id;
}

describe('batched POST /graphql (a JSON array of operations)', () => {
  it('serves Apollo Client’s BatchHttpLink: operations sent together take one request, answered in order', async () => {
    const requests: unknown[] = [];
    const client = new ApolloClient({
      link: new BatchHttpLink({
        uri: `${gateway.url}/graphql`,
        headers: { authorization: alice },
        batchMax: 10,
        batchInterval: 20,
        fetch: async (input, init) => {
          requests.push(JSON.parse(String(init?.body)));
          return fetch(input, init);
        },
      }),
      cache: new InMemoryCache(),
    });
    const [quota, page, one] = await Promise.all([
      client.query({ query: gql('query Quota { quota }'), fetchPolicy: 'network-only' }),
      client.query({ query: gql('query Page { conversations(first: 1) { totalCount } }'), fetchPolicy: 'network-only' }),
      client.query({ query: gql('query One { conversation(number: 2) { name } }'), fetchPolicy: 'network-only' }),
    ]);
    expect(requests).toHaveLength(1);
    expect(requests[0]).toHaveLength(3);
    expect(quota.data).toEqual({ quota: 12.5 });
    expect(page.data).toEqual({ conversations: { __typename: 'ConversationConnection', totalCount: 2 } });
    expect(one.data).toEqual({ conversation: { __typename: 'Conversation', name: 'Recipes' } });
  });

  it('answers a JSON array of the results in the operations’ order', async () => {
    const answer = await postGraphql(
      gateway.url,
      [{ query: '{ conversation(number: 2) { name } }' }, { query: '{ quota }' }, { query: '{ conversation(number: 1) { name } }' }],
      { authorization: alice },
    );
    expect(answer.status).toBe(200);
    expect(answer.headers['cache-control']).toBe('no-store');
    expect(json(answer)).toEqual([
      { data: { conversation: { name: 'Recipes' } } },
      { data: { quota: 12.5 } },
      { data: { conversation: { name: 'Trip plan' } } },
    ]);
  });

  it('observes each operation on its own, as if it came alone', async () => {
    const count = async (name: string) =>
      sample(await scrapeMetrics(gateway.url), 'graphql_operations_total', { operation_name: name, result: 'success' });
    const before = [await count('BatchA'), await count('BatchB')];
    const answer = await postGraphql(
      gateway.url,
      [{ query: 'query BatchA { quota }' }, { query: 'query BatchB { quota }' }, { query: 'query BatchA { quota }' }],
      { authorization: alice },
    );
    expect(answer.status).toBe(200);
    expect([await count('BatchA'), await count('BatchB')]).toEqual([before[0]! + 2, before[1]! + 1]);
  });

  it('holds each operation to every limit on its own: the refused one fails, the others run', async () => {
    const aliases = `{ ${Array.from({ length: 16 }, (_, index) => `a${index}: quota`).join(' ')} }`;
    // 25 spreads of a page of 100 names cost 5 025, over the limit of 5 000.
    const costly = `{ ${Array.from({ length: 25 }, () => '...Page').join(' ')} } fragment Page on Query { conversations { nodes { name } } }`;
    const answer = await postGraphql(gateway.url, [{ query: '{ quota }' }, { query: aliases }, { query: costly }, { query: '{ quota }' }], {
      authorization: alice,
    });
    const results = json(answer) as { data?: unknown; errors?: { message: string; extensions: { code: string } }[] }[];
    expect(results).toHaveLength(4);
    expect(results[0]).toEqual({ data: { quota: 12.5 } });
    expect(results[1]!.errors![0]!.extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(results[1]!.errors![0]!.message).toMatch(/aliases/i);
    expect(results[2]!.errors![0]!.message).toMatch(/cost limit/);
    expect(results[3]).toEqual({ data: { quota: 12.5 } });
  });

  it('bounds the answer as a whole: two operations that each fit, together over RESPONSE_MAX_BYTES, are not both answered', async () => {
    const messages = (number: number) => ({ query: `{ conversation(number: ${number}) { messages { content } } }` });
    const alone = json(await postGraphql(gateway.url, messages(1), { authorization: alice }));
    expect(alone.data.conversation.messages[0].content).toBe(LONG);
    const answer = await postGraphql(gateway.url, [messages(1), messages(2)], { authorization: alice });
    const results = json(answer) as { errors?: { extensions: { code: string } }[] }[];
    expect(results.map((result) => result.errors?.[0]?.extensions.code)).toContain('RESPONSE_TOO_LARGE');
    expect(answer.text.length).toBeLessThan(65_536 + 1_000);
  });

  it('refuses a batch of more than GRAPHQL_BATCH_MAX operations with 400, running none of them', async () => {
    const id = await globalIdOf(1);
    const eleven = Array.from({ length: 11 }, (_, index) => ({
      ...rename(`Renamed ${index}`),
      variables: { id, name: `Renamed ${index}` },
    }));
    const answer = await postGraphql(gateway.url, eleven, { authorization: alice });
    expect(answer.status).toBe(400);
    expect(json(answer).errors[0]).toMatchObject({
      message: expect.stringMatching(/at most 10 operations/),
      extensions: { code: 'BAD_REQUEST' },
    });
    expect(await conversationName(1)).toBe('Trip plan');
    const ten = eleven.slice(0, 10);
    expect((json(await postGraphql(gateway.url, ten, { authorization: alice })) as unknown[]).length).toBe(10);
    expect(await conversationName(1)).toMatch(/^Renamed \d$/);
    await postGraphql(gateway.url, { ...rename('Trip plan'), variables: { id, name: 'Trip plan' } }, { authorization: alice });
  });

  it('counts each operation as one request for the rate limit: a batch past the caller’s rate is refused (429), running none', async () => {
    const bob = `Bearer ${await gateway.token(BOB)}`;
    const answer = await postGraphql(gateway.url, { query: '{ conversation(number: 1) { id } }' }, { authorization: bob });
    const id = json(answer).data.conversation.id;
    const four = Array.from({ length: 4 }, (_, index) => ({ ...rename(`Bob ${index}`), variables: { id, name: `Bob ${index}` } }));
    const refused = await postGraphql(limited.url, four, { authorization: bob });
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBeDefined();
    expect(await conversationName(1, bob)).toBe('Bob’s');
  });

  it('is refused whole with GRAPHQL_BATCH_MAX=1', async () => {
    const answer = await postGraphql(single.url, [{ query: '{ quota }' }, { query: '{ quota }' }], { authorization: alice });
    expect(answer.status).toBe(400);
    expect(json(answer).errors[0].message).toMatch(/GRAPHQL_BATCH_MAX=1/);
    expect(json(await postGraphql(single.url, { query: '{ quota }' }, { authorization: alice })).data).toEqual({ quota: 12.5 });
  });
});
