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
  query Page($first: Int, $after: String) {
    conversations(first: $first, after: $after) {
      totalCount
      nodes {
        id
        userId
        name
        model
        enableWeb
      }
      edges {
        cursor
        node {
          id
        }
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
`;

describe('Query.conversations', () => {
  it('returns the 100 newest conversations by default, newest first, with a cursor to continue', async () => {
    const { status, body } = await graphql(gateway, PAGE, { authorization: alice });
    expect(status).toBe(200);
    const page = body.data.conversations;
    expect(page.totalCount).toBe(ALICE_CONVERSATIONS);
    expect(page.nodes).toHaveLength(100);
    expect(page.nodes.map((node: { id: number }) => node.id)).toEqual(
      Array.from({ length: 100 }, (_, index) => ALICE_CONVERSATIONS - index),
    );
    expect(page.nodes[0]).toEqual({ id: 150, userId: ALICE, name: 'Alice 150', model: 'gpt-4o', enableWeb: false });
    expect(page.edges.map((edge: { node: { id: number } }) => edge.node.id)).toEqual(page.nodes.map((node: { id: number }) => node.id));
    expect(page.pageInfo).toEqual({ hasNextPage: true, endCursor: page.edges[99].cursor });
  });

  it('walks every conversation exactly once across pages', async () => {
    const seen: number[] = [];
    let after: string | null = null;
    for (;;) {
      const { body }: GraphQLResponse = await graphql(gateway, PAGE, { authorization: alice, variables: { first: 40, after } });
      const page: any = body.data!.conversations;
      seen.push(...page.nodes.map((node: { id: number }) => node.id));
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    expect(seen).toEqual(Array.from({ length: ALICE_CONVERSATIONS }, (_, index) => ALICE_CONVERSATIONS - index));
  });

  it('caps `first` at 100', async () => {
    const { body } = await graphql(gateway, PAGE, { authorization: alice, variables: { first: 5000 } });
    expect(body.data.conversations.nodes).toHaveLength(100);
  });

  it('answers an empty page for first: 0', async () => {
    const { body } = await graphql(gateway, PAGE, { authorization: alice, variables: { first: 0 } });
    expect(body.data.conversations.nodes).toEqual([]);
    expect(body.data.conversations.pageInfo).toEqual({ hasNextPage: true, endCursor: null });
  });

  it('rejects a negative `first` and a cursor it did not issue as bad user input', async () => {
    for (const variables of [{ first: -1 }, { after: 'bm90LWEtY3Vyc29y' }, { after: '!!' }]) {
      const { body } = await graphql(gateway, PAGE, { authorization: alice, variables });
      expect(body.data).toBeNull();
      expect(body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    }
  });

  it('shows each caller only their own conversations', async () => {
    const { body } = await graphql(gateway, PAGE, { authorization: bob });
    expect(body.data.conversations.totalCount).toBe(2);
    expect(body.data.conversations.nodes.map((node: { id: number; userId: number }) => [node.id, node.userId])).toEqual([
      [507, BOB],
      [501, BOB],
    ]);
  });

  it('reads the messages of a whole page in one batched query', async () => {
    const query = `{ conversations { nodes { id messages { role content } } } }`;
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

describe('Query.conversation', () => {
  const ONE = `query One($id: Int!) { conversation(id: $id) { id userId name model enableWeb messages { role content } } }`;

  it('returns one conversation with its messages in order, in one query', async () => {
    let body: any;
    const commands = await gateway.commandsDuring(async () => {
      ({ body } = await graphql(gateway, ONE, { authorization: alice, variables: { id: 3 } }));
    });
    expect(body.data.conversation).toEqual({
      id: 3,
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
            a: conversation(id: 1) {
              name
            }
            b: conversation(id: 2) {
              name
            }
            c: conversation(id: 507) {
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

  it('is null for an unknown id and for another user’s conversation', async () => {
    for (const id of [999, 507, 0, -5]) {
      const { body } = await graphql(gateway, ONE, { authorization: alice, variables: { id } });
      expect(body).toEqual({ data: { conversation: null } });
    }
  });
});

describe('Mutation.deleteConversation', () => {
  const DELETE = `mutation Delete($id: Int!) { deleteConversation(id: $id) { ok error { code message } } }`;

  it('deletes a conversation once; a second delete answers NOT_FOUND', async () => {
    const first = await graphql(gateway, DELETE, { authorization: bob, variables: { id: 501 } });
    expect(first.body).toEqual({ data: { deleteConversation: { ok: true, error: null } } });
    const again = await graphql(gateway, DELETE, { authorization: bob, variables: { id: 501 } });
    expect(again.body).toEqual({
      data: { deleteConversation: { ok: false, error: { code: 'NOT_FOUND', message: 'conversation not found' } } },
    });
    const { body } = await graphql(
      gateway,
      `
        {
          conversation(id: 501) {
            id
          }
        }
      `,
      { authorization: bob },
    );
    expect(body.data).toEqual({ conversation: null });
  });

  it('cannot delete another user’s conversation, which behaves like an unknown id', async () => {
    const { body } = await graphql(gateway, DELETE, { authorization: alice, variables: { id: 507 } });
    expect(body.data.deleteConversation.error.code).toBe('NOT_FOUND');
    const still = await graphql(
      gateway,
      `
        {
          conversation(id: 507) {
            name
          }
        }
      `,
      { authorization: bob },
    );
    expect(still.body.data).toEqual({ conversation: { name: 'Bob seven' } });
  });

  it('keeps a deleted conversation’s id reserved: the owner’s id sequence stays past it', async () => {
    const { body } = await graphql(gateway, DELETE, { authorization: alice, variables: { id: ALICE_CONVERSATIONS } });
    expect(body.data.deleteConversation.ok).toBe(true);
    const user = await gateway.models.users.findOne({ id: ALICE }).lean();
    expect(user?.lastConversationId).toBe(ALICE_CONVERSATIONS);
  });
});

describe('Mutation.renameConversation', () => {
  const RENAME = `mutation Rename($id: Int!, $name: String!) {
    renameConversation(id: $id, name: $name) { ok error { code message } conversation { id userId name messages { content } } }
  }`;

  it('renames a conversation and answers it with its new name, stored exactly as given', async () => {
    const name = ' Trip to Zürich — “draft” 🚀 ';
    const { body } = await graphql(gateway, RENAME, { authorization: carol, variables: { id: 12, name } });
    expect(body).toEqual({
      data: {
        renameConversation: { ok: true, error: null, conversation: { id: 12, userId: CAROL, name, messages: [{ content: 'hello 12' }] } },
      },
    });
    const stored = await gateway.models.conversations.findOne({ userId: CAROL, id: 12 }).lean();
    expect(stored?.name).toBe(name);
  });

  it('answers NOT_FOUND for an unknown id and for another user’s conversation, which keeps its name', async () => {
    for (const id of [999, 507]) {
      const { body } = await graphql(gateway, RENAME, { authorization: carol, variables: { id, name: 'Mine now' } });
      expect(body).toEqual({
        data: { renameConversation: { ok: false, error: { code: 'NOT_FOUND', message: 'conversation not found' }, conversation: null } },
      });
    }
    const { body } = await graphql(
      gateway,
      `
        {
          conversation(id: 507) {
            name
          }
        }
      `,
      { authorization: bob },
    );
    expect(body.data).toEqual({ conversation: { name: 'Bob seven' } });
  });

  it('answers INVALID_INPUT "invalid name" for an empty, blank or too long name, before reading anything', async () => {
    for (const name of ['', '   ', '\n\t', 'x'.repeat(257)]) {
      const commands = await gateway.commandsDuring(async () => {
        const { body } = await graphql(gateway, RENAME, { authorization: carol, variables: { id: 11, name } });
        expect(body).toEqual({
          data: { renameConversation: { ok: false, error: { code: 'INVALID_INPUT', message: 'invalid name' }, conversation: null } },
        });
      });
      expect(commands).toEqual([]);
    }
    const { body } = await graphql(
      gateway,
      `
        {
          conversation(id: 11) {
            name
          }
        }
      `,
      { authorization: carol },
    );
    expect(body.data).toEqual({ conversation: { name: 'Carol 11' } });
  });

  it('renames with one database command', async () => {
    const commands = await gateway.commandsDuring(async () => {
      const { body } = await graphql(
        gateway,
        `
          mutation {
            renameConversation(id: 13, name: "Short") {
              ok
            }
          }
        `,
        { authorization: carol },
      );
      expect(body.data).toEqual({ renameConversation: { ok: true } });
    });
    expect(commands).toEqual(['findAndModify']);
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
    const mine = await graphql(
      gateway,
      `
        {
          conversations {
            totalCount
            nodes {
              id
            }
          }
        }
      `,
      { authorization: carol },
    );
    expect(mine.body.data).toEqual({ conversations: { totalCount: 0, nodes: [] } });
    const bobs = await graphql(
      gateway,
      `
        {
          conversations {
            totalCount
          }
        }
      `,
      { authorization: bob },
    );
    expect(bobs.body.data.conversations.totalCount).toBeGreaterThan(0);
  });

  it('answers ok with deletedCount 0 when nothing is left', async () => {
    const { body } = await graphql(gateway, DELETE_ALL, { authorization: carol });
    expect(body).toEqual({ data: { deleteAllConversations: { ok: true, deletedCount: 0 } } });
  });

  it('keeps the deleted conversations’ ids reserved: the owner’s id sequence stays past them', async () => {
    const user = await gateway.models.users.findOne({ id: CAROL }).lean();
    expect(user?.lastConversationId).toBe(13);
  });

  it('is refused over GET, like every mutation', async () => {
    const response = await fetch(`${gateway.url}/graphql?query=${encodeURIComponent(DELETE_ALL)}`, { headers: { authorization: bob } });
    expect(response.status).toBe(405);
    const { body } = await graphql(
      gateway,
      `
        {
          conversations {
            totalCount
          }
        }
      `,
      { authorization: bob },
    );
    expect(body.data.conversations.totalCount).toBeGreaterThan(0);
  });
});
