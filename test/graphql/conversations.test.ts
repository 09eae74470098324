import type { CommandStartedEvent } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { graphql, type GraphQLResponse, startTestGateway, type TestGateway } from '../support/gateway.js';

const ALICE = 1;
const BOB = 2;
/** Renames and deletes all, apart from the others' fixtures. */
const CAROL = 3;
const ALICE_CONVERSATIONS = 150;

let gateway: TestGateway;
let alice: string;
let bob: string;
let carol: string;

beforeAll(async () => {
  gateway = await startTestGateway();
  await gateway.seed({
    users: [
      { id: ALICE, username: 'alice', quota: 12.5 },
      { id: BOB, username: 'bob', quota: 3 },
      { id: CAROL, username: 'carol', quota: 0 },
    ],
    conversations: [
      ...Array.from({ length: ALICE_CONVERSATIONS }, (_, index) => ({
        userId: ALICE,
        id: index + 1,
        name: `Alice ${index + 1}`,
        model: index % 2 ? 'gpt-4o' : 'gpt-4o-mini',
        enableWeb: index % 3 === 0,
        messages: [
          { role: 'system', content: `system ${index + 1}` },
          { role: 'user', content: `question ${index + 1}` },
          { role: 'assistant', content: `answer ${index + 1}` },
        ],
      })),
      { userId: BOB, id: 501, name: 'Bob one', model: 'gpt-4o', enableWeb: true, messages: [{ role: 'user', content: 'hi' }] },
      { userId: BOB, id: 507, name: 'Bob seven', model: 'gpt-4o', enableWeb: false, messages: [] },
      ...[11, 12, 13].map((id) => ({
        userId: CAROL,
        id,
        name: `Carol ${id}`,
        model: 'gpt-4o',
        enableWeb: false,
        messages: [{ role: 'user', content: `hello ${id}` }],
      })),
    ],
  });
  alice = `Bearer ${await gateway.token(ALICE)}`;
  bob = `Bearer ${await gateway.token(BOB)}`;
  carol = `Bearer ${await gateway.token(CAROL)}`;
});

afterAll(() => gateway?.stop());

const PAGE = /* GraphQL */ `
  query Page($first: Int, $after: String, $last: Int, $before: String) {
    conversations(first: $first, after: $after, last: $last, before: $before) {
      totalCount
      nodes {
        number
        userId
        name
        model
        enableWeb
      }
      edges {
        cursor
        node {
          number
        }
      }
      pageInfo {
        hasNextPage
        hasPreviousPage
        startCursor
        endCursor
      }
    }
  }
`;

type Page = { nodes: { number: number }[]; pageInfo: Record<string, unknown>; edges: { cursor: string }[] };

/** Numbers from `from` down to `to`. */
const countdown = (from: number, to: number) => Array.from({ length: from - to + 1 }, (_, index) => from - index);

async function page(authorization: string, variables: Record<string, unknown>): Promise<Page> {
  const { body } = await graphql(gateway, PAGE, { authorization, variables });
  expect(body.errors).toBeUndefined();
  return body.data.conversations;
}

const numbers = (page: Page) => page.nodes.map((node) => node.number);

describe('Query.conversations', () => {
  it('returns the 100 newest conversations by default, newest first, with a cursor to continue', async () => {
    const { status, body } = await graphql(gateway, PAGE, { authorization: alice });
    expect(status).toBe(200);
    const page = body.data.conversations;
    expect(page.totalCount).toBe(ALICE_CONVERSATIONS);
    expect(page.nodes).toHaveLength(100);
    expect(numbers(page)).toEqual(countdown(ALICE_CONVERSATIONS, 51));
    expect(page.nodes[0]).toEqual({ number: 150, userId: ALICE, name: 'Alice 150', model: 'gpt-4o', enableWeb: false });
    expect(page.edges.map((edge: { node: { number: number } }) => edge.node.number)).toEqual(numbers(page));
    expect(page.pageInfo).toEqual({
      hasNextPage: true,
      hasPreviousPage: false,
      startCursor: page.edges[0].cursor,
      endCursor: page.edges[99].cursor,
    });
  });

  it('walks every conversation exactly once across pages, forward', async () => {
    const seen: number[] = [];
    let after: string | null = null;
    for (;;) {
      const { body }: GraphQLResponse = await graphql(gateway, PAGE, { authorization: alice, variables: { first: 40, after } });
      const page: any = body.data!.conversations;
      seen.push(...page.nodes.map((node: { number: number }) => node.number));
      expect(page.pageInfo.hasPreviousPage).toBe(after !== null);
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    expect(seen).toEqual(countdown(ALICE_CONVERSATIONS, 1));
  });

  it('walks every conversation exactly once across pages, backward from the oldest', async () => {
    const seen: number[] = [];
    let before: string | null = null;
    for (;;) {
      const current: Page = await page(alice, { last: 40, before });
      seen.unshift(...numbers(current));
      expect(current.pageInfo.hasNextPage).toBe(before !== null);
      if (!current.pageInfo.hasPreviousPage) break;
      before = current.pageInfo.startCursor as string;
    }
    expect(seen).toEqual(countdown(ALICE_CONVERSATIONS, 1));
  });

  it('answers the last conversations of the range, newest first, with exact flags on both sides', async () => {
    const oldest = await page(alice, { last: 3 });
    expect(numbers(oldest)).toEqual([3, 2, 1]);
    expect(oldest.pageInfo).toEqual({
      hasNextPage: false,
      hasPreviousPage: true,
      startCursor: oldest.edges[0]!.cursor,
      endCursor: oldest.edges[2]!.cursor,
    });
    const newer = await page(alice, { last: 2, before: oldest.pageInfo.startCursor });
    expect(numbers(newer)).toEqual([5, 4]);
    expect(newer.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: true });
    // Back to the start: nothing is newer than 150.
    const newest = await page(alice, { last: 10, before: (await page(alice, { first: 5 })).pageInfo.endCursor });
    expect(numbers(newest)).toEqual(countdown(150, 147));
    expect(newest.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
  });

  it('answers the conversations between two cursors', async () => {
    const [after, before] = [
      (await page(alice, { first: 1, after: null })).pageInfo.endCursor,
      (await page(alice, { last: 1 })).pageInfo.startCursor,
    ];
    const forward = await page(alice, { first: 100, after, before });
    expect(numbers(forward)).toEqual(countdown(149, 50));
    expect(forward.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: true });
    const backward = await page(alice, { last: 3, after, before: (await page(alice, { first: 5 })).pageInfo.endCursor });
    expect(numbers(backward)).toEqual([149, 148, 147]);
    expect(backward.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
  });

  it('reads a page with the flag on its own side in one command, and the other side only when asked for', async () => {
    const after = (await page(alice, { first: 10 })).pageInfo.endCursor;
    const ask = (flags: string, variables: Record<string, unknown>) =>
      gateway.commandsDuring(async () => {
        const query = `query Flags($first: Int, $after: String, $last: Int, $before: String) {
          conversations(first: $first, after: $after, last: $last, before: $before) { nodes { name } pageInfo { ${flags} } } }`;
        const { body } = await graphql(gateway, query, { authorization: alice, variables });
        expect(body.errors).toBeUndefined();
      });
    expect(await ask('hasNextPage startCursor endCursor', { first: 10, after })).toEqual(['find']);
    expect(await ask('hasNextPage hasPreviousPage', { first: 10, after })).toEqual(['find', 'find']);
    expect(await ask('hasPreviousPage startCursor', { last: 10, before: after })).toEqual(['find']);
    expect(await ask('hasPreviousPage hasNextPage', { last: 10, before: after })).toEqual(['find', 'find']);
    // Without a cursor on the other side there is nothing to read.
    expect(await ask('hasNextPage hasPreviousPage', { first: 10 })).toEqual(['find']);
    // Both counts: both flags compare the range with a count.
    expect(await ask('hasNextPage hasPreviousPage', { first: 10, last: 3, after })).toEqual(['find']);
  });

  it('reads `first` and `last` together in one query of at most one row more than the larger count, newest first', async () => {
    const finds: Record<string, unknown>[] = [];
    const client = gateway.database.connection.getClient();
    const listener = (event: CommandStartedEvent) => {
      if (event.commandName === 'find') finds.push(event.command);
    };
    client.on('commandStarted', listener);
    try {
      expect(numbers(await page(alice, { first: 20, last: 5 }))).toEqual(countdown(135, 131));
      expect(numbers(await page(alice, { first: 5, last: 20 }))).toEqual(countdown(150, 146));
    } finally {
      client.off('commandStarted', listener);
    }
    // The driver sends the sort as a Map.
    const newestFirst = new Map([['id', -1]]);
    expect(finds.map(({ sort, limit }) => ({ sort, limit }))).toEqual([
      { sort: newestFirst, limit: 21 },
      { sort: newestFirst, limit: 21 },
    ]);
  });

  it('caps `first` at 100', async () => {
    const { body } = await graphql(gateway, PAGE, { authorization: alice, variables: { first: 5000 } });
    expect(body.data.conversations.nodes).toHaveLength(100);
  });

  it('caps `last` at 100', async () => {
    const { body } = await graphql(gateway, PAGE, { authorization: alice, variables: { last: 5000 } });
    expect(numbers(body.data.conversations)).toEqual(countdown(100, 1));
  });

  it('caps `first` and `last` at 100 each when both are given', async () => {
    const both = await page(alice, { first: 5000, last: 5000 });
    expect(numbers(both)).toEqual(countdown(150, 51));
    expect(both.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: true });
    // The first 100 (not 120), then their last 5.
    expect(numbers(await page(alice, { first: 120, last: 5 }))).toEqual(countdown(55, 51));
  });

  it('answers an empty page for first: 0 and last: 0', async () => {
    const { body } = await graphql(gateway, PAGE, { authorization: alice, variables: { first: 0 } });
    expect(body.data.conversations.nodes).toEqual([]);
    expect(body.data.conversations.pageInfo).toEqual({ hasNextPage: true, hasPreviousPage: false, startCursor: null, endCursor: null });
    const last = await page(alice, { last: 0 });
    expect(last.pageInfo).toEqual({ hasNextPage: false, hasPreviousPage: true, startCursor: null, endCursor: null });
  });

  it('rejects a negative count and a cursor it did not issue as bad user input', async () => {
    for (const variables of [
      { first: -1 },
      { last: -1 },
      { first: 10, last: -1 },
      { after: 'bm90LWEtY3Vyc29y' },
      { after: '!!' },
      { last: 1, before: 'bm90LWEtY3Vyc29y' },
    ]) {
      const { body } = await graphql(gateway, PAGE, { authorization: alice, variables });
      expect(body.data).toBeNull();
      expect(body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    }
  });

  it('shows each caller only their own conversations', async () => {
    const { body } = await graphql(gateway, PAGE, { authorization: bob });
    expect(body.data.conversations.totalCount).toBe(2);
    expect(body.data.conversations.nodes.map((node: { number: number; userId: number }) => [node.number, node.userId])).toEqual([
      [507, BOB],
      [501, BOB],
    ]);
  });

  it('reads the messages of a whole page in one batched query', async () => {
    const query = `{ conversations { nodes { id number messages { role content } } } }`;
    let body: any;
    const commands = await gateway.commandsDuring(async () => {
      ({ body } = await graphql(gateway, query, { authorization: alice }));
    });
    expect(body.data.conversations.nodes).toHaveLength(100);
    expect(body.data.conversations.nodes[0].messages).toEqual([
      { role: 'system', content: 'system 150' },
      { role: 'user', content: 'question 150' },
      { role: 'assistant', content: 'answer 150' },
    ]);
    expect(commands).toEqual(['find', 'find']);
  });

  it('reads a page without messages in one query', async () => {
    const commands = await gateway.commandsDuring(() =>
      graphql(
        gateway,
        `
          {
            conversations {
              nodes {
                id
                name
              }
            }
          }
        `,
        { authorization: alice },
      ),
    );
    expect(commands).toEqual(['find']);
  });
});

/** The global id of `number` among the caller's conversations, as the API gives it. */
async function idOf(authorization: string, number: number): Promise<string> {
  const { body } = await graphql(gateway, 'query Id($number: Int!) { conversation(number: $number) { id } }', {
    authorization,
    variables: { number },
  });
  return body.data.conversation.id;
}

describe('Query.conversation', () => {
  const ONE = `query One($number: Int!) { conversation(number: $number) { id number userId name model enableWeb messages { role content } } }`;

  it('returns one conversation by its number with its messages in order, in one query', async () => {
    let body: any;
    const commands = await gateway.commandsDuring(async () => {
      ({ body } = await graphql(gateway, ONE, { authorization: alice, variables: { number: 3 } }));
    });
    expect(body.data.conversation).toEqual({
      id: expect.stringMatching(/^[A-Za-z0-9_-]+$/),
      number: 3,
      userId: ALICE,
      name: 'Alice 3',
      model: 'gpt-4o-mini',
      enableWeb: false,
      messages: [
        { role: 'system', content: 'system 3' },
        { role: 'user', content: 'question 3' },
        { role: 'assistant', content: 'answer 3' },
      ],
    });
    expect(commands).toEqual(['find']);
  });

  it('batches several conversations asked for in one operation into one query', async () => {
    let body: any;
    const commands = await gateway.commandsDuring(async () => {
      ({ body } = await graphql(
        gateway,
        `
          {
            a: conversation(number: 1) {
              name
            }
            b: conversation(number: 2) {
              name
            }
            c: conversation(number: 507) {
              name
            }
          }
        `,
        {
          authorization: alice,
        },
      ));
    });
    expect(body.data).toEqual({ a: { name: 'Alice 1' }, b: { name: 'Alice 2' }, c: null });
    expect(commands).toEqual(['find']);
  });

  it('is null for an unknown number and for another user’s conversation', async () => {
    for (const number of [999, 507, 0, -5]) {
      const { body } = await graphql(gateway, ONE, { authorization: alice, variables: { number } });
      expect(body).toEqual({ data: { conversation: null } });
    }
  });
});

describe('global ids and Query.node', () => {
  const NODE = `query Node($id: ID!) { node(id: $id) { __typename id ... on Conversation { number userId name } } }`;

  it('gives each conversation an opaque id, the same every time, distinct for two users’ conversations of one number', async () => {
    const alices = await idOf(alice, 11);
    const carols = await idOf(carol, 11);
    expect(alices).not.toBe(carols);
    expect(alices).not.toMatch(/11/);
    expect(await idOf(alice, 11)).toBe(alices);
    const listed = await graphql(gateway, '{ conversations(first: 1) { nodes { id } edges { node { id } } } }', { authorization: alice });
    expect(listed.body.data.conversations.nodes[0].id).toBe(await idOf(alice, 150));
    expect(listed.body.data.conversations.edges[0].node.id).toBe(await idOf(alice, 150));
  });

  it('fetches a conversation again by its id through node', async () => {
    const id = await idOf(alice, 42);
    const { body } = await graphql(gateway, NODE, { authorization: alice, variables: { id } });
    expect(body).toEqual({ data: { node: { __typename: 'Conversation', id, number: 42, userId: ALICE, name: 'Alice 42' } } });
  });

  it('answers null for another user’s conversation, as for an id that names nothing', async () => {
    const carols = await idOf(carol, 12);
    const forged = (text: string) => Buffer.from(text).toString('base64url');
    for (const id of [
      carols,
      forged('Conversation:1:999'),
      forged('Conversation:1:0'),
      forged('Conversation:1:012'),
      forged('Conversation:1:2147483648'),
      forged('Message:1:12'),
      `${await idOf(alice, 12)}=`,
      `${await idOf(alice, 12)}!`,
      '',
      'not an id',
    ]) {
      const { body } = await graphql(gateway, NODE, { authorization: alice, variables: { id } });
      expect(body, id).toEqual({ data: { node: null } });
    }
    const { body } = await graphql(gateway, NODE, { authorization: carol, variables: { id: carols } });
    expect(body.data.node).toMatchObject({ number: 12, userId: CAROL });
  });

  it('answers nodes in the order asked, null where node would be, in one database query', async () => {
    const ids = [await idOf(alice, 7), await idOf(carol, 13), 'nonsense', await idOf(alice, 8), await idOf(alice, 9)];
    let body: any;
    const commands = await gateway.commandsDuring(async () => {
      ({ body } = await graphql(gateway, 'query Nodes($ids: [ID!]!) { nodes(ids: $ids) { id ... on Conversation { number } } }', {
        authorization: alice,
        variables: { ids },
      }));
    });
    expect(body.data.nodes).toEqual([{ id: ids[0], number: 7 }, null, null, { id: ids[3], number: 8 }, { id: ids[4], number: 9 }]);
    expect(commands).toEqual(['find']);
  });

  it('refuses nodes of more than 100 ids as bad user input', async () => {
    const ids = Array.from({ length: 101 }, () => 'x');
    const { body } = await graphql(gateway, 'query Nodes($ids: [ID!]!) { nodes(ids: $ids) { id } }', {
      authorization: alice,
      variables: { ids },
    });
    expect(body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });
});

describe('Mutation.deleteConversation', () => {
  const DELETE = `mutation Delete($id: ID!) { deleteConversation(id: $id) { ok error { code message } deletedConversationId } }`;

  it('deletes a conversation once, naming its id; a second delete answers NOT_FOUND', async () => {
    const id = await idOf(bob, 501);
    const first = await graphql(gateway, DELETE, { authorization: bob, variables: { id } });
    expect(first.body).toEqual({ data: { deleteConversation: { ok: true, error: null, deletedConversationId: id } } });
    const again = await graphql(gateway, DELETE, { authorization: bob, variables: { id } });
    expect(again.body).toEqual({
      data: {
        deleteConversation: { ok: false, error: { code: 'NOT_FOUND', message: 'conversation not found' }, deletedConversationId: null },
      },
    });
    const { body } = await graphql(gateway, 'query Node($id: ID!) { node(id: $id) { id } }', { authorization: bob, variables: { id } });
    expect(body.data).toEqual({ node: null });
  });

  it('cannot delete another user’s conversation, which behaves like an unknown id, without reading anything', async () => {
    const bobs = await idOf(bob, 507);
    for (const id of [bobs, 'not an id']) {
      const commands = await gateway.commandsDuring(async () => {
        const { body } = await graphql(gateway, DELETE, { authorization: alice, variables: { id } });
        expect(body.data.deleteConversation).toMatchObject({ ok: false, error: { code: 'NOT_FOUND' }, deletedConversationId: null });
      });
      expect(commands).toEqual([]);
    }
    const still = await graphql(gateway, '{ conversation(number: 507) { name } }', { authorization: bob });
    expect(still.body.data).toEqual({ conversation: { name: 'Bob seven' } });
  });

  it('keeps a deleted conversation’s number reserved: the owner’s sequence stays past it', async () => {
    const { body } = await graphql(gateway, DELETE, { authorization: alice, variables: { id: await idOf(alice, ALICE_CONVERSATIONS) } });
    expect(body.data.deleteConversation.ok).toBe(true);
    const user = await gateway.models.users.findOne({ id: ALICE }).lean();
    expect(user?.lastConversationId).toBe(ALICE_CONVERSATIONS);
  });

  it('keeps cursors valid after the conversation they name is deleted, both ways', async () => {
    const around = await page(alice, { first: 3, after: (await page(alice, { first: 10 })).pageInfo.endCursor });
    expect(numbers(around)).toEqual([139, 138, 137]);
    const cursorOf138 = around.edges[1]!.cursor;
    const { body } = await graphql(gateway, DELETE, { authorization: alice, variables: { id: await idOf(alice, 138) } });
    expect(body.data.deleteConversation.ok).toBe(true);
    expect(numbers(await page(alice, { first: 2, after: cursorOf138 }))).toEqual([137, 136]);
    expect(numbers(await page(alice, { last: 2, before: cursorOf138 }))).toEqual([140, 139]);
  });

  it('deletes by number for clients that name conversations as the REST endpoints do', async () => {
    const BY_NUMBER = `mutation Delete($number: Int!) { deleteConversationByNumber(number: $number) { ok error { code } deletedConversationId } }`;
    const id = await idOf(alice, 100);
    const { body } = await graphql(gateway, BY_NUMBER, { authorization: alice, variables: { number: 100 } });
    expect(body.data).toEqual({ deleteConversationByNumber: { ok: true, error: null, deletedConversationId: id } });
    const again = await graphql(gateway, BY_NUMBER, { authorization: alice, variables: { number: 100 } });
    expect(again.body.data).toEqual({
      deleteConversationByNumber: { ok: false, error: { code: 'NOT_FOUND' }, deletedConversationId: null },
    });
  });
});

describe('Mutation.renameConversation', () => {
  const RENAME = `mutation Rename($id: ID!, $name: String!) {
    renameConversation(id: $id, name: $name) { ok error { code message } conversation { id number userId name messages { content } } }
  }`;

  it('renames a conversation and answers it with its new name, stored exactly as given', async () => {
    const name = ' Trip to Zürich — “draft” 🚀 ';
    const id = await idOf(carol, 12);
    const { body } = await graphql(gateway, RENAME, { authorization: carol, variables: { id, name } });
    expect(body).toEqual({
      data: {
        renameConversation: {
          ok: true,
          error: null,
          conversation: { id, number: 12, userId: CAROL, name, messages: [{ content: 'hello 12' }] },
        },
      },
    });
    const stored = await gateway.models.conversations.findOne({ userId: CAROL, id: 12 }).lean();
    expect(stored?.name).toBe(name);
  });

  it('answers NOT_FOUND for an unknown id and for another user’s conversation, which keeps its name', async () => {
    for (const id of [Buffer.from('Conversation:3:999').toString('base64url'), await idOf(bob, 507)]) {
      const { body } = await graphql(gateway, RENAME, { authorization: carol, variables: { id, name: 'Mine now' } });
      expect(body).toEqual({
        data: { renameConversation: { ok: false, error: { code: 'NOT_FOUND', message: 'conversation not found' }, conversation: null } },
      });
    }
    const { body } = await graphql(gateway, '{ conversation(number: 507) { name } }', { authorization: bob });
    expect(body.data).toEqual({ conversation: { name: 'Bob seven' } });
  });

  it('answers INVALID_INPUT "invalid name" for an empty, blank or too long name, before reading anything', async () => {
    const id = await idOf(carol, 11);
    for (const name of ['', '   ', '\n\t', 'x'.repeat(257)]) {
      const commands = await gateway.commandsDuring(async () => {
        const { body } = await graphql(gateway, RENAME, { authorization: carol, variables: { id, name } });
        expect(body).toEqual({
          data: { renameConversation: { ok: false, error: { code: 'INVALID_INPUT', message: 'invalid name' }, conversation: null } },
        });
      });
      expect(commands).toEqual([]);
    }
    const { body } = await graphql(gateway, '{ conversation(number: 11) { name } }', { authorization: carol });
    expect(body.data).toEqual({ conversation: { name: 'Carol 11' } });
  });

  it('renames with one database command, by id or by number', async () => {
    const id = await idOf(carol, 13);
    for (const [mutation, variables] of [
      ['mutation Rename($id: ID!) { renameConversation(id: $id, name: "Short") { ok } }', { id }],
      ['mutation { renameConversationByNumber(number: 13, name: "Shorter") { ok } }', {}],
    ] as const) {
      const commands = await gateway.commandsDuring(async () => {
        const { body } = await graphql(gateway, mutation, { authorization: carol, variables });
        expect(Object.values(body.data)).toEqual([{ ok: true }]);
      });
      expect(commands).toEqual(['findAndModify']);
    }
    const { body } = await graphql(gateway, '{ conversation(number: 13) { name } }', { authorization: carol });
    expect(body.data).toEqual({ conversation: { name: 'Shorter' } });
  });
});

describe('Mutation.deleteAllConversations', () => {
  const DELETE_ALL = `mutation { deleteAllConversations { ok deletedCount } }`;

  it('deletes every conversation of the caller, counts them, and leaves others’ alone', async () => {
    const commands = await gateway.commandsDuring(async () => {
      const { body } = await graphql(gateway, DELETE_ALL, { authorization: carol });
      expect(body).toEqual({ data: { deleteAllConversations: { ok: true, deletedCount: 3 } } });
    });
    expect(commands).toEqual(['delete']);
    const mine = await graphql(gateway, '{ conversations { totalCount nodes { id } } }', { authorization: carol });
    expect(mine.body.data).toEqual({ conversations: { totalCount: 0, nodes: [] } });
    const bobs = await graphql(gateway, '{ conversations { totalCount } }', { authorization: bob });
    expect(bobs.body.data.conversations.totalCount).toBeGreaterThan(0);
  });

  it('answers ok with deletedCount 0 when nothing is left', async () => {
    const { body } = await graphql(gateway, DELETE_ALL, { authorization: carol });
    expect(body).toEqual({ data: { deleteAllConversations: { ok: true, deletedCount: 0 } } });
  });

  it('keeps the deleted conversations’ numbers reserved: the owner’s sequence stays past them', async () => {
    const user = await gateway.models.users.findOne({ id: CAROL }).lean();
    expect(user?.lastConversationId).toBe(13);
  });

  it('is refused over GET, like every mutation', async () => {
    const response = await fetch(`${gateway.url}/graphql?query=${encodeURIComponent(DELETE_ALL)}`, { headers: { authorization: bob } });
    expect(response.status).toBe(405);
    const { body } = await graphql(gateway, '{ conversations { totalCount } }', { authorization: bob });
    expect(body.data.conversations.totalCount).toBeGreaterThan(0);
  });
});
