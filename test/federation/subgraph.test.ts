import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { createClient as createSseClient } from 'graphql-sse';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { buildSchema } from '../../src/graphql/schema.js';
import { documentIdOf } from '../../src/operations/documents.js';
import { apolloSubscription, data, Received, runningSubscription } from '../subscriptions/helpers.js';
import { graphql, startTestGateway, type TestGateway } from '../support/gateway.js';
import { sample, scrapeMetrics } from '../support/metrics.js';

const SEED = {
  users: [
    { id: 1, username: 'alice', quota: 12.5 },
    { id: 2, username: 'bob', quota: 3 },
  ],
  conversations: [
    ...Array.from({ length: 5 }, (_, index) => ({
      userId: 1,
      id: index + 1,
      name: `Chat ${index + 1}`,
      model: 'gpt-4o',
      enableWeb: false,
      messages: [{ role: 'user', content: `question ${index + 1}` }],
    })),
    { userId: 2, id: 1, name: 'Bob’s secret', model: 'gpt-4o', enableWeb: false, messages: [] },
  ],
};

/** What a router sends for entities of this subgraph. */
const ENTITIES = `query Entities($representations: [_Any!]!) {
  _entities(representations: $representations) { ... on Conversation { id number name messages { role content } } }
}`;

/** The global id of user `userId`'s conversation `number`, as `Conversation.id` gives it. */
const globalId = (userId: number, number: number) => Buffer.from(`Conversation:${userId}:${number}`).toString('base64url');
const representation = (id: unknown) => ({ __typename: 'Conversation', id });

let subgraph: TestGateway;
let alice: string;

beforeAll(async () => {
  subgraph = await startTestGateway({ FEDERATION_SUBGRAPH: 'true' });
  await subgraph.seed(SEED);
  alice = `Bearer ${await subgraph.token(1)}`;
});
afterAll(() => subgraph?.stop());

describe('without FEDERATION_SUBGRAPH', () => {
  it('has nothing of federation in its schema: no _service, no _entities, no federation types or directives', () => {
    const schema = buildSchema();
    const names = [...Object.keys(schema.getTypeMap()), ...schema.getDirectives().map((directive) => `@${directive.name}`)];
    expect(
      names.filter((name) => /^(_(Service|Entity|Any)|link__|federation__|@(key|link|shareable|external|requires|provides))/.test(name)),
    ).toEqual([]);
    expect(Object.keys(schema.getQueryType()!.getFields()).filter((name) => name.startsWith('_'))).toEqual([]);
  });

  it('refuses _service and _entities as fields it does not have', async () => {
    const plain = await startTestGateway();
    try {
      const authorization = `Bearer ${await plain.token(1)}`;
      const answer = await graphql(plain, '{ _service { sdl } }', { authorization });
      expect(answer.status).toBe(400);
      expect(answer.body.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
    } finally {
      await plain.stop();
    }
  });
});

describe('with FEDERATION_SUBGRAPH=true', () => {
  it('gives its SDL with federation directives in _service: Conversation is an entity keyed by id', async () => {
    const answer = await graphql<{ _service: { sdl: string } }>(subgraph, '{ _service { sdl } }', { authorization: alice });
    expect(answer.status).toBe(200);
    const { sdl } = answer.body.data!._service;
    expect(sdl).toMatch(/@link\(url: "https:\/\/specs\.apollo\.dev\/federation\/v2\.\d+"/);
    expect(sdl).toMatch(/\nextend type Conversation\s+@key\(fields: "id"\)\n/);
    // The same types as without federation: the schema's own fields are all there.
    for (const field of ['node(', 'nodes(', 'conversations(', 'renameConversation(', 'quota: Float!']) expect(sdl).toContain(field);
  });

  it('resolves the caller’s conversations in _entities as node does, with the same global ids', async () => {
    const ids = [globalId(1, 2), globalId(1, 4)];
    const entities = await graphql(subgraph, ENTITIES, { authorization: alice, variables: { representations: ids.map(representation) } });
    const nodes = await graphql(
      subgraph,
      'query($ids: [ID!]!) { nodes(ids: $ids) { ... on Conversation { id number name messages { role content } } } }',
      {
        authorization: alice,
        variables: { ids },
      },
    );
    expect(entities.status).toBe(200);
    expect(entities.body).toEqual({ data: { _entities: nodes.body.data!.nodes } });
    expect(entities.body.data!._entities).toEqual([
      { id: ids[0], number: 2, name: 'Chat 2', messages: [{ role: 'user', content: 'question 2' }] },
      { id: ids[1], number: 4, name: 'Chat 4', messages: [{ role: 'user', content: 'question 4' }] },
    ]);
  });

  it('answers null for another user’s conversation, an unknown one and an id that is not one of this API', async () => {
    const representations = [globalId(2, 1), globalId(1, 99), 'Q29udmVyc2F0aW9uOjI6MQ', 'not an id'].map(representation);
    const answer = await graphql(subgraph, ENTITIES, { authorization: alice, variables: { representations } });
    expect(answer.body).toEqual({ data: { _entities: [null, null, null, null] } });
    expect(JSON.stringify(answer.body)).not.toContain('secret');
  });

  it.each([
    ['not an object', 42],
    ['of a type that is no entity here', { __typename: 'Message', id: globalId(1, 1) }],
    ['without a string id', { __typename: 'Conversation', id: 1 }],
  ])('refuses a representation %s as bad input, before anything runs', async (_case, given) => {
    const commands = await subgraph.commandsDuring(async () => {
      // In variables, as routers send them (a variable that does not coerce), and written in the document (invalid).
      for (const [query, variables, code] of [
        [ENTITIES, { representations: [representation(globalId(1, 1)), given] }, 'BAD_USER_INPUT'],
        [
          `{ _entities(representations: [${JSON.stringify(given).replace(/"(\w+)":/g, '$1:')}]) { __typename } }`,
          undefined,
          'GRAPHQL_VALIDATION_FAILED',
        ],
      ] as const) {
        const answer = await graphql(subgraph, query, { authorization: alice, variables });
        expect(answer.status).toBe(400);
        expect(answer.body.data).toBeUndefined();
        expect(answer.body.errors).toEqual([
          expect.objectContaining({
            message: expect.stringContaining('a representation must be {"__typename": "Conversation", "id": <a conversation\'s id>}'),
            extensions: expect.objectContaining({ code }),
          }),
        ]);
      }
    });
    expect(commands).toEqual([]);
  });

  it('reads many representations in one batched database read, through the loader node and nodes use', async () => {
    const representations = [1, 2, 3, 4, 5, 6].map((number) => representation(globalId(1, number)));
    const query = `query($representations: [_Any!]!, $id: ID!) {
      _entities(representations: $representations) { ... on Conversation { name } }
      node(id: $id) { ... on Conversation { name } }
    }`;
    let answer: Awaited<ReturnType<typeof graphql>> | undefined;
    const commands = await subgraph.commandsDuring(async () => {
      answer = await graphql(subgraph, query, { authorization: alice, variables: { representations, id: globalId(1, 5) } });
    });
    expect(answer?.body.data).toEqual({
      _entities: [1, 2, 3, 4, 5, null].map((number) => (number === null ? null : { name: `Chat ${number}` })),
      node: { name: 'Chat 5' },
    });
    expect(commands).toEqual(['find']);
  });

  it('refuses a request without a credential before anything runs', async () => {
    const answer = await graphql(subgraph, ENTITIES, { variables: { representations: [representation(globalId(1, 1))] } });
    expect(answer.status).toBe(401);
    expect(answer.body.data).toBeUndefined();
    expect(JSON.stringify(answer.body)).not.toContain('Chat');
  });

  it('prices _entities by its representations: too many for the cost limit are refused before anything runs', async () => {
    const representations = Array.from({ length: 300 }, (_, index) => representation(globalId(1, index + 1)));
    const commands = await subgraph.commandsDuring(async () => {
      const answer = await graphql(subgraph, ENTITIES, { authorization: alice, variables: { representations } });
      expect(answer.status).toBe(400);
      expect(answer.body.errors).toEqual([
        expect.objectContaining({ message: expect.stringMatching(/^Operation cost limit of 5000 exceeded, found \d+\.$/) }),
      ]);
    });
    expect(commands).toEqual([]);
  });

  it('runs _entities compiled from its second run, like any query', async () => {
    const count = async () => sample(await scrapeMetrics(subgraph.url), 'graphql_executions_total', { executor: 'compiled' });
    const query = `query Compiled($representations: [_Any!]!) { _entities(representations: $representations) { ... on Conversation { number } } }`;
    const before = await count();
    for (let run = 0; run < 3; run++) {
      const answer = await graphql(subgraph, query, {
        authorization: alice,
        variables: { representations: [representation(globalId(1, 3))] },
      });
      expect(answer.body).toEqual({ data: { _entities: [{ number: 3 }] } });
    }
    expect((await count()) - before).toBe(2);
  });

  it('still serves subscriptions, on the same schema, over WebSocket, Server-Sent Events and multipart HTTP', async () => {
    const { socket, operation } = await runningSubscription(subgraph.url, alice, 'subscription { quota }');
    expect(data(await operation.next())).toEqual({ quota: 12.5 });
    await socket.close();

    const sse = createSseClient({ url: `${subgraph.url}/graphql/stream`, headers: { authorization: alice }, retryAttempts: 0 });
    const overSse = new Received<{ quota: number }>();
    const dispose = sse.subscribe({ query: 'subscription { quota }' }, overSse.sink);
    expect(await overSse.first(1)).toEqual([{ data: { quota: 12.5 } }]);
    dispose();
    sse.dispose();

    const multipart = apolloSubscription(subgraph.url, alice, 'subscription { quota }');
    expect((await multipart.received.first(1))[0]).toMatchObject({ data: { quota: 12.5 } });
    multipart.stop();
  });

  it('serves the legacy REST endpoints as without it', async () => {
    const response = await fetch(`${subgraph.url}/conversation/list`, { headers: { authorization: alice } });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { data: unknown[] }).data).toHaveLength(5);
  });
});

describe('_entities behind every door and bound, as any query', () => {
  let scratch: string;
  let guarded: TestGateway;
  const entityId = globalId(1, 1);
  const representations = [representation(entityId)];

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'subgraph-'));
    const file = join(scratch, 'documents.json');
    await writeFile(file, JSON.stringify({ [documentIdOf(ENTITIES)]: ENTITIES }));
    guarded = await startTestGateway(
      {
        FEDERATION_SUBGRAPH: 'true',
        PERSISTED_DOCUMENTS: file,
        PERSISTED_DOCUMENTS_ONLY: 'true',
        RESPONSE_MAX_BYTES: '65536',
        RATE_LIMIT: '2',
      },
      { database: subgraph.testDatabase },
    );
  });
  afterAll(async () => {
    await guarded?.stop();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  const post = (body: unknown, authorization: string) =>
    fetch(`${guarded.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization },
      body: JSON.stringify(body),
    });

  it('runs only trusted documents when told to: _entities by its id, never by its text', async () => {
    const byText = await post({ query: ENTITIES, variables: { representations } }, alice);
    expect(byText.status).toBe(400);
    expect(((await byText.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code).toBe(
      'PERSISTED_QUERY_ONLY',
    );
    const byId = await post({ documentId: documentIdOf(ENTITIES), variables: { representations } }, alice);
    expect(((await byId.json()) as { data: { _entities: { name: string }[] } }).data._entities[0]!.name).toBe('Chat 1');
  });

  it('refuses an _entities answer past the response bound, whole', async () => {
    await subgraph.seed({
      users: [{ id: 3, username: 'carol', quota: 0 }],
      conversations: [
        { userId: 3, id: 1, name: 'Long', model: 'gpt-4o', enableWeb: false, messages: [{ role: 'user', content: 'x'.repeat(70_000) }] },
      ],
    });
    const answer = await post(
      { documentId: documentIdOf(ENTITIES), variables: { representations: [representation(globalId(3, 1))] } },
      `Bearer ${await subgraph.token(3)}`,
    );
    expect(answer.status).toBe(400);
    expect(await answer.json()).toEqual({
      errors: [expect.objectContaining({ extensions: expect.objectContaining({ code: 'RESPONSE_TOO_LARGE', maxBytes: 65_536 }) })],
    });
  });

  it('counts each _entities request against the caller’s rate limit', async () => {
    const bob = `Bearer ${await subgraph.token(2)}`;
    const statuses = await Promise.all(
      Array.from(
        { length: 15 },
        async () => (await post({ documentId: documentIdOf(ENTITIES), variables: { representations } }, bob)).status,
      ),
    );
    expect(statuses).toContain(429);
    expect(statuses).toContain(200);
  });
});
