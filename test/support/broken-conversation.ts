import { secretKey, signAccessToken } from '../../src/auth/access-token.js';
import { loadSeed } from '../../src/seed/seed-file.js';
import type { RunningService } from '../../src/service.js';
import { TEST_JWT_SECRET } from './gateway.js';

export const ALICE = 7;
/** The id of a conversation that loading fails on, unexpectedly. */
export const BROKEN = 2;

/**
 * Alice with one conversation, and one that another writer stored with a message whose role is
 * no string: the schema cannot show it. Answers Alice's `Authorization` header.
 */
export async function seedBrokenConversation(service: Pick<RunningService, 'domains'>): Promise<string> {
  await loadSeed(service.domains, {
    users: [{ id: ALICE, username: 'alice', quota: 3 }],
    conversations: [
      { userId: ALICE, id: 1, name: 'Trip plan', model: 'gpt-4o', enableWeb: false, messages: [{ role: 'user', content: 'hello' }] },
    ],
  });
  await service.domains.conversations.models.conversations.collection.insertOne({
    userId: ALICE,
    id: BROKEN,
    name: 'Broken',
    model: 'gpt-4o',
    enableWeb: false,
    messages: [{ role: { nested: true }, content: 'x' }],
  });
  return `Bearer ${await signAccessToken(secretKey(TEST_JWT_SECRET), ALICE)}`;
}
