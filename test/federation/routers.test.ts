import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { composeServices as composeWithApollo } from '@apollo/composition';
import { ApolloGateway, RemoteGraphQLDataSource } from '@apollo/gateway';
import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginInlineTraceDisabled } from '@apollo/server/plugin/disabled';
import { startStandaloneServer } from '@apollo/server/standalone';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { composeServices as composeWithTheGuild } from '@theguild/federation-composition';
import { parse } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { graphql, startTestGateway, type TestGateway } from '../support/gateway.js';
import { killIfRunning, spawnNode } from '../support/node-process.js';

/**
 * This gateway as a subgraph of a supergraph, beside a second subgraph made here ("notes") that
 * gives `Conversation` a field of its own and lists conversations by id, composed by Apollo's
 * composition and served by Apollo Gateway, composed by The Guild's and served by Hive Gateway
 * (in a process of its own).
 * Each router forwards the client's `Authorization` to both subgraphs.
 */

const SEED = {
  users: [
    { id: 1, username: 'alice', quota: 12.5 },
    { id: 2, username: 'bob', quota: 3 },
  ],
  conversations: [
    { userId: 1, id: 1, name: 'Trip plan', model: 'gpt-4o', enableWeb: false, messages: [{ role: 'user', content: 'Where to?' }] },
    { userId: 1, id: 2, name: 'Recipes', model: 'gpt-4o', enableWeb: false, messages: [] },
    { userId: 1, id: 3, name: 'To rename', model: 'gpt-4o', enableWeb: false, messages: [] },
    { userId: 1, id: 4, name: 'To rename too', model: 'gpt-4o', enableWeb: false, messages: [] },
    { userId: 2, id: 1, name: 'Bob’s secret', model: 'gpt-4o', enableWeb: false, messages: [] },
  ],
};

const globalId = (userId: number, number: number) => Buffer.from(`Conversation:${userId}:${number}`).toString('base64url');

const NOTES_TYPE_DEFS = parse(`
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key"])

  type Conversation @key(fields: "id") {
    id: ID!
    "A note the notes service keeps on the conversation."
    note: String!
  }

  type Query {
    "Conversations pinned by id, as the notes service lists them."
    pinned(ids: [ID!]!): [Conversation]!
  }
`);

interface Notes {
  url: string;
  /** The Authorization header of each request the notes subgraph received. */
  authorizations: (string | undefined)[];
  stop(): Promise<void>;
}

/** The second subgraph: @apollo/subgraph's schema on Apollo Server, on 127.0.0.1. */
async function startNotes(): Promise<Notes> {
  const authorizations: (string | undefined)[] = [];
  const server = new ApolloServer({
    schema: buildSubgraphSchema({
      typeDefs: NOTES_TYPE_DEFS,
      resolvers: {
        Query: { pinned: (_: unknown, { ids }: { ids: string[] }) => ids.map((id) => ({ id })) },
        Conversation: {
          __resolveReference: ({ id }: { id: string }) => ({ id }),
          note: ({ id }: { id: string }) => `note on ${id}`,
        },
      },
    }),
    plugins: [ApolloServerPluginInlineTraceDisabled()],
  });
  const { url } = await startStandaloneServer(server, {
    listen: { host: '127.0.0.1', port: 0 },
    context: async ({ req }) => {
      authorizations.push(req.headers.authorization);
      return {};
    },
  });
  return { url, authorizations, stop: () => server.stop() };
}

interface Router {
  url: string;
  stop(): Promise<void>;
}

type Subgraphs = { name: string; typeDefs: ReturnType<typeof parse>; url: string }[];

/** Apollo Gateway on Apollo Server, over the supergraph Apollo's composition makes, forwarding Authorization. */
async function startApolloGateway(subgraphs: Subgraphs): Promise<Router> {
  const composed = composeWithApollo(subgraphs);
  if (composed.errors) throw new Error(composed.errors.map((error) => error.message).join('\n'));
  const gateway = new ApolloGateway({
    supergraphSdl: composed.supergraphSdl,
    buildService: ({ url }) =>
      new RemoteGraphQLDataSource<{ authorization?: string }>({
        url,
        willSendRequest({ request, context }) {
          if (context.authorization !== undefined) request.http?.headers.set('authorization', context.authorization);
        },
      }),
  });
  const server = new ApolloServer<{ authorization?: string }>({ gateway });
  const { url } = await startStandaloneServer(server, {
    listen: { host: '127.0.0.1', port: 0 },
    context: async ({ req }) => ({ authorization: req.headers.authorization }),
  });
  return { url: url.replace(/\/$/, ''), stop: () => server.stop() };
}

/** Hive Gateway in a process of its own (hive-gateway.ts), over the supergraph The Guild's composition makes, forwarding Authorization. */
async function startHiveGateway(subgraphs: Subgraphs): Promise<Router> {
  const composed = composeWithTheGuild(subgraphs);
  if (composed.errors) throw new Error(composed.errors.map((error) => error.message).join('\n'));
  const directory = await mkdtemp(join(tmpdir(), 'supergraph-'));
  const file = join(directory, 'supergraph.graphql');
  await writeFile(file, composed.supergraphSdl);
  const gateway = spawnNode('test/federation/hive-gateway.ts', ['--supergraph', file], {}, { nodeFlags: ['--import', 'tsx'] });
  try {
    const [, url] = await gateway.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/, { timeoutMs: 30_000 });
    return {
      url: url!,
      async stop() {
        await killIfRunning(gateway);
        await rm(directory, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await killIfRunning(gateway);
    throw error;
  }
}

let chat: TestGateway;
let notes: Notes;
let subgraphs: Subgraphs;
let alice: string;

beforeAll(async () => {
  chat = await startTestGateway({ FEDERATION_SUBGRAPH: 'true' });
  await chat.seed(SEED);
  alice = `Bearer ${await chat.token(1)}`;
  notes = await startNotes();
  const { body } = await graphql<{ _service: { sdl: string } }>(chat, '{ _service { sdl } }', { authorization: alice });
  subgraphs = [
    { name: 'chat', typeDefs: parse(body.data!._service.sdl), url: `${chat.url}/graphql` },
    { name: 'notes', typeDefs: NOTES_TYPE_DEFS, url: notes.url },
  ];
});
afterAll(async () => {
  await notes?.stop();
  await chat?.stop();
});

describe.each([
  ['Apollo Gateway, over @apollo/composition', startApolloGateway],
  ['Hive Gateway, over @theguild/federation-composition', startHiveGateway],
])('through %s', (_router, start) => {
  let router: Router;

  beforeAll(async () => {
    router = await start(subgraphs);
  });
  afterAll(() => router?.stop());

  it('answers a screen’s query mixing both subgraphs’ fields, with this subgraph’s global ids', async () => {
    notes.authorizations.length = 0;
    const answer = await graphql(router, '{ quota conversations(first: 2) { edges { node { id number name note } } } }', {
      authorization: alice,
    });
    expect(answer.body).toEqual({
      data: {
        quota: 12.5,
        conversations: {
          edges: [4, 3].map((number) => ({
            node: { id: globalId(1, number), number, name: expect.any(String), note: `note on ${globalId(1, number)}` },
          })),
        },
      },
    });
    // The notes subgraph got the client's credential too.
    expect(notes.authorizations).toEqual([alice]);
  });

  it('refetches a conversation by node, with the other subgraph’s field', async () => {
    const id = globalId(1, 1);
    const answer = await graphql(
      router,
      'query($id: ID!) { node(id: $id) { id ... on Conversation { name note messages { content } } } }',
      {
        authorization: alice,
        variables: { id },
      },
    );
    expect(answer.body).toEqual({ data: { node: { id, name: 'Trip plan', note: `note on ${id}`, messages: [{ content: 'Where to?' }] } } });
  });

  it('renames a conversation, and answers it with both subgraphs’ fields', async () => {
    const number = _router.startsWith('Apollo') ? 3 : 4;
    const id = globalId(1, number);
    const name = `Renamed through ${_router.split(',')[0]}`;
    const answer = await graphql(
      router,
      'mutation($id: ID!, $name: String!) { renameConversation(id: $id, name: $name) { ok conversation { id name note } } }',
      { authorization: alice, variables: { id, name } },
    );
    expect(answer.body).toEqual({ data: { renameConversation: { ok: true, conversation: { id, name, note: `note on ${id}` } } } });
    expect((await chat.models.conversations.findOne({ userId: 1, id: number }).lean())?.name).toBe(name);
  });

  it('resolves this subgraph’s fields through _entities for the caller only: another user’s conversation is null', async () => {
    const bobs = globalId(2, 1);
    const own = globalId(1, 2);
    const answer = await graphql(router, 'query($ids: [ID!]!) { pinned(ids: $ids) { id note name } }', {
      authorization: alice,
      variables: { ids: [own, bobs] },
    });
    expect(answer.body.data).toEqual({ pinned: [{ id: own, note: `note on ${own}`, name: 'Recipes' }, null] });
    expect(JSON.stringify(answer.body)).not.toContain('secret');
  });

  it('is refused by this subgraph without a credential, and nothing of it leaks', async () => {
    const answer = await graphql(router, '{ quota conversations(first: 5) { edges { node { id name note } } } }');
    expect(answer.body.data ?? null).toBeNull();
    expect(answer.body.errors?.length).toBeGreaterThan(0);
    const text = JSON.stringify(answer.body);
    // This subgraph's own refusal, as the router passed it on.
    expect(text).toContain('missing or invalid credentials');
    for (const name of ['Trip plan', 'Recipes', '12.5']) expect(text).not.toContain(name);
  });

  it('is refused by this subgraph when the query costs more than its limit', async () => {
    const page = 'conversations(first: 100) { edges { node { note messages { role content } } } }';
    const answer = await graphql(router, `{ a: ${page} b: ${page} }`, { authorization: alice });
    expect(answer.body.data ?? null).toBeNull();
    expect(JSON.stringify(answer.body.errors)).toMatch(/Operation cost limit of 5000 exceeded, found \d+\./);
  });

  it.skipIf(!_router.startsWith('Hive'))('routes a subscription to this subgraph’s Server-Sent Events door, for the caller', async () => {
    const abort = new AbortController();
    const response = await fetch(`${router.url}/graphql`, {
      method: 'POST',
      signal: abort.signal,
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: alice },
      body: JSON.stringify({ query: 'subscription { quota }' }),
    });
    const events = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    const until = async (part: string) => {
      while (!text.includes(part)) text += (await events.read()).value ?? '';
    };
    try {
      await until('data: {"data":{"quota":12.5}}');
      await chat.models.users.updateOne({ id: 1 }, { $inc: { balanceMicros: 1_000_000 } });
      await until('data: {"data":{"quota":13.5}}');
    } finally {
      abort.abort();
      await chat.models.users.updateOne({ id: 1 }, { $inc: { balanceMicros: -1_000_000 } });
    }
  });
});
