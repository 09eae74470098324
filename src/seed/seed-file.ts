import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { pointsToUnits } from '../accounts/points.js';
import type { AccountStore } from '../accounts/account.store.js';
import { hashApiKey, API_KEY_PREFIX } from '../auth/api-key.js';
import type { ConversationStore } from '../conversations/conversation.store.js';

const id = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);

const seedSchema = z.object({
  users: z
    .array(
      z.object({
        id,
        username: z.string().min(1),
        quota: z.number().finite().min(0).default(0),
        apiKeys: z.array(z.string().startsWith(API_KEY_PREFIX).min(12)).default([]),
      }),
    )
    .default([]),
  conversations: z
    .array(
      z.object({
        userId: id,
        /** Omitted: the next id of the user's sequence. */
        id: id.optional(),
        name: z.string(),
        model: z.string(),
        enableWeb: z.boolean().default(false),
        messages: z.array(z.object({ role: z.string().min(1), content: z.string() })).default([]),
      }),
    )
    .default([]),
});

export type SeedData = z.input<typeof seedSchema>;

/** Where seed data goes: the accounts and conversations domains (`createAccounts`, `createConversations`). */
export interface SeedTarget {
  accounts: { store: AccountStore };
  conversations: { store: ConversationStore };
}

export async function readSeedFile(path: string): Promise<SeedData> {
  return JSON.parse(await readFile(path, 'utf8')) as SeedData;
}

/**
 * Loads seed data idempotently: users upserted by id (balance set to `quota`),
 * conversations upserted by (userId, id), and each user's id sequence moved
 * past the highest id loaded.
 */
export async function loadSeed({ accounts, conversations }: SeedTarget, data: SeedData): Promise<{ users: number; conversations: number }> {
  const seed = seedSchema.parse(data);
  const knownUsers = new Set(seed.users.map((user) => user.id));
  for (const user of seed.users) {
    await accounts.store.upsertUser({ id: user.id, username: user.username, balanceUnits: pointsToUnits(user.quota) });
    for (const key of user.apiKeys) await accounts.store.addApiKey(hashApiKey(key), user.id);
  }
  for (const { id: givenId, ...conversation } of seed.conversations) {
    if (!knownUsers.has(conversation.userId)) {
      throw new Error(`seed conversation "${conversation.name}" belongs to user ${conversation.userId}, who is not in the file`);
    }
    const conversationId = givenId ?? (await accounts.store.nextConversationId(conversation.userId));
    await conversations.store.upsert({ ...conversation, id: conversationId });
    await accounts.store.reserveConversationIds(conversation.userId, conversationId);
  }
  return { users: seed.users.length, conversations: seed.conversations.length };
}
