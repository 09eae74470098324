import { describe, expect, it } from 'vitest';

import type { AccountStore } from '../../../src/accounts/account.store.js';
import { hashApiKey } from '../../../src/auth/api-key.js';
import type { ConversationStore } from '../../../src/conversations/conversation.store.js';
import { loadSeed, SeedError } from '../../../src/seed/seed-file.js';

/** What the database holds already, and every write the seed makes. */
function target(existing: { userIds?: number[]; usernames?: Record<string, number>; keys?: Record<string, number> } = {}) {
  const writes: string[] = [];
  const accounts: Pick<
    AccountStore,
    'existingUserIds' | 'userIdsByUsername' | 'apiKeyOwners' | 'upsertUsers' | 'addApiKeys' | 'reserveConversationIds'
  > = {
    existingUserIds: async (ids) => new Set(ids.filter((id) => existing.userIds?.includes(id))),
    userIdsByUsername: async (names) =>
      new Map(names.flatMap((name) => (existing.usernames?.[name] === undefined ? [] : [[name, existing.usernames[name]!] as const]))),
    apiKeyOwners: async (hashes) =>
      new Map(
        Object.entries(existing.keys ?? {}).flatMap(([key, owner]) =>
          hashes.includes(hashApiKey(key)) ? [[hashApiKey(key), owner] as const] : [],
        ),
      ),
    upsertUsers: async (users) => void writes.push(`users ${users.map((user) => `${user.id}:${user.balanceMicros}`).join(',')}`),
    addApiKeys: async (keys) => void writes.push(`keys ${keys.map((key) => key.userId).join(',')}`),
    reserveConversationIds: async (highest) => void writes.push(`sequences ${[...highest].map(([user, id]) => `${user}>${id}`).join(',')}`),
  };
  const conversations: Pick<ConversationStore, 'upsertMany'> = {
    upsertMany: async (rows) => void writes.push(`conversations ${rows.map((row) => `${row.userId}/${row.id}`).join(',')}`),
  };
  return {
    writes,
    seedTarget: { accounts: { store: accounts as AccountStore }, conversations: { store: conversations as ConversationStore } },
  };
}

async function problemsOf(data: unknown, existing?: Parameters<typeof target>[0]): Promise<{ problems: string[]; writes: string[] }> {
  const { seedTarget, writes } = target(existing);
  const error = await loadSeed(seedTarget, data).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof SeedError)) throw new Error(`expected a SeedError, got ${String(error)}`);
  return { problems: error.problems, writes };
}

const KEY = 'sk-alice-0123456789abcdef';

describe('loading seed data', () => {
  it('writes users (balance in micro-points), their keys, conversations, then moves each owner’s sequence past its highest', async () => {
    const { seedTarget, writes } = target();
    const loaded = await loadSeed(seedTarget, {
      users: [
        { id: 1, username: 'alice', quota: 2.5, apiKeys: [KEY] },
        { id: 2, username: 'bob' },
      ],
      conversations: [
        { userId: 1, id: 4, name: 'a', model: 'm' },
        { userId: 1, id: 9, name: 'b', model: 'm', messages: [{ role: 'user', content: 'hi' }] },
      ],
    });
    expect(loaded).toEqual({ users: 2, conversations: 2 });
    expect(writes).toEqual(['users 1:2500000,2:0', 'keys 1', 'conversations 1/4,1/9', 'sequences 1>9']);
  });

  it('takes conversations of users already in the database', async () => {
    const { seedTarget, writes } = target({ userIds: [5] });
    await loadSeed(seedTarget, { conversations: [{ userId: 5, id: 1, name: 'a', model: 'm' }] });
    expect(writes).toContain('conversations 5/1');
  });

  it('accepts an empty object: nothing to write', async () => {
    const { seedTarget } = target();
    await expect(loadSeed(seedTarget, {})).resolves.toEqual({ users: 0, conversations: 0 });
  });
});

describe('the seed checks, all before anything is written', () => {
  it.each([
    ['null', null, 'not null'],
    ['an array', [], 'not an array'],
    ['a string', 'users', 'not string'],
  ])('refuses %s as the whole file', async (_, data, found) => {
    const { problems, writes } = await problemsOf(data);
    expect(problems).toEqual([`(file): must be a JSON object with "users" and "conversations" arrays, ${found}`]);
    expect(writes).toEqual([]);
  });

  it('refuses fields the format does not have, at the top and in entries', async () => {
    const { problems } = await problemsOf({ users: [{ id: 1, username: 'a', admin: true }], extra: 1 });
    expect(problems[0]).toMatch(/extra/);
    const { problems: inEntry } = await problemsOf({ users: [{ id: 1, username: 'a', admin: true }] });
    expect(inEntry[0]).toMatch(/^users\[0\].*admin/);
  });

  it('tells every problem at once, each with its path, then how many and that nothing was written', async () => {
    const { problems, writes } = await problemsOf({
      users: [
        { id: 0, username: 'a' },
        { id: 2, username: '  ', quota: -1 },
        { id: 3, username: 'c', quota: 1.0000001 },
      ],
      conversations: [{ userId: 3, id: 1.5, name: 'x', model: 'm' }],
    });
    expect(problems).toEqual([
      'users[0].id: must be an integer from 1 to 2147483647',
      'users[1].username: must not be empty',
      'users[1].quota: must be from 0 to 1000000000',
      'users[2].quota: must have at most 6 decimal places',
      'conversations[0].id: must be an integer from 1 to 2147483647',
      '5 problems; nothing was written',
    ]);
    expect(writes).toEqual([]);
  });

  it('refuses a user, a username, a key or a conversation listed twice, naming both places', async () => {
    const { problems } = await problemsOf({
      users: [
        { id: 1, username: 'alice', apiKeys: [KEY] },
        { id: 1, username: 'alice', apiKeys: [KEY] },
      ],
      conversations: [
        { userId: 1, id: 1, name: 'a', model: 'm' },
        { userId: 1, id: 1, name: 'b', model: 'm' },
      ],
    });
    expect(problems).toEqual([
      'users[1].id: user 1 is listed twice (also users[0].id)',
      'users[1].username: "alice" is listed twice (also users[0].username)',
      'users[1].apiKeys[0]: this key is listed twice (also users[0].apiKeys[0])',
      'conversations[1]: conversation 1 of user 1 is listed twice (also conversations[0])',
      '4 problems; nothing was written',
    ]);
  });

  it('refuses a conversation whose owner is neither in the file nor in the database', async () => {
    const { problems } = await problemsOf({ conversations: [{ userId: 8, id: 1, name: 'a', model: 'm' }] });
    expect(problems[0]).toBe('conversations[0].userId: user 8 is neither in the file nor in the database');
  });

  it('refuses a username or a key another user holds in the database', async () => {
    const { problems } = await problemsOf(
      { users: [{ id: 1, username: 'alice', apiKeys: [KEY] }] },
      { usernames: { alice: 2 }, keys: { [KEY]: 3 } },
    );
    expect(problems).toEqual([
      'users[0].username: "alice" belongs to user 2 in the database',
      'users[0].apiKeys[0]: this key belongs to user 3 in the database',
      '2 problems; nothing was written',
    ]);
  });

  it('lets a user keep its own username and key when loaded again', async () => {
    const { seedTarget, writes } = target({ usernames: { alice: 1 }, keys: { [KEY]: 1 } });
    await loadSeed(seedTarget, { users: [{ id: 1, username: 'alice', apiKeys: [KEY] }] });
    expect(writes[0]).toBe('users 1:0');
  });

  it('refuses a key that is not shaped like one', async () => {
    const { problems } = await problemsOf({ users: [{ id: 1, username: 'a', apiKeys: ['not-a-key'] }] });
    expect(problems[0]).toMatch(/^users\[0\]\.apiKeys\[0\]: must start with sk-/);
  });

  it('puts the source before each problem', async () => {
    const { seedTarget } = target();
    const error = await loadSeed(seedTarget, { users: [{ id: 0, username: 'a' }] }, { source: 'seed.json' }).catch(
      (thrown: SeedError) => thrown,
    );
    expect((error as SeedError).problems[0]).toBe('seed.json: users[0].id: must be an integer from 1 to 2147483647');
  });
});
