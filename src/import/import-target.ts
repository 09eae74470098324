import type { AccountStore } from '../accounts/account.store.js';
import { microsToPoints } from '../accounts/points.js';
import { type Gift, GIFT_POINTS } from '../billing/gift.js';
import type { GiftGrantStore } from '../billing/gift-grant.store.js';
import type { ConversationRecord } from '../conversations/conversation.model.js';
import type { ConversationStore } from '../conversations/conversation.store.js';
import type { LegacyUser } from './chat-nio.js';

/** What became of one record: written now, there already as it is, or refused with the reason. */
export type WriteOutcome = 'written' | 'there' | { conflict: string };

/** Where the records of a Chat Nio database go; each call writes one batch and answers for each record, in order. */
export interface ImportTarget {
  users(users: readonly LegacyUser[]): Promise<WriteOutcome[]>;
  apiKeys(keys: readonly { userId: number; hash: string }[]): Promise<WriteOutcome[]>;
  gifts(gifts: readonly { userId: number; gift: Gift }[]): Promise<WriteOutcome[]>;
  conversations(conversations: readonly Required<ConversationRecord>[]): Promise<WriteOutcome[]>;
  /** Moves each user's conversation-number sequence to at least the number given. */
  reserveConversationNumbers(highest: ReadonlyMap<number, number>): Promise<void>;
}

/** A dry run: nothing is written, and every record counts as one that would be. */
export const dryRunTarget: ImportTarget = {
  users: async (users) => users.map(() => 'written'),
  apiKeys: async (keys) => keys.map(() => 'written'),
  gifts: async (gifts) => gifts.map(() => 'written'),
  conversations: async (conversations) => conversations.map(() => 'written'),
  reserveConversationNumbers: async () => undefined,
};

/**
 * The database named by MONGODB_URI, through its stores. Every write only adds what is missing,
 * so what is there already (from an earlier run, or written since by the service) is never
 * changed; a record that differs from what is there is reported instead.
 */
export function storeTarget(stores: {
  accounts: AccountStore;
  conversations: ConversationStore;
  giftGrants: GiftGrantStore;
}): ImportTarget {
  const { accounts, conversations, giftGrants } = stores;
  return {
    async users(users) {
      const { inserted, duplicates } = await accounts.insertMissingUsers(users);
      const held = await accounts.usersById(users.map((user) => user.id));
      const holders = await accounts.userIdsByUsername(users.filter((_user, index) => duplicates.has(index)).map((user) => user.username));
      return users.map((user, index) => {
        const here = held.get(user.id);
        if (here === undefined) {
          const holder = holders.get(user.username);
          return {
            conflict:
              holder === undefined ? 'could not be written' : `username ${JSON.stringify(user.username)} belongs to user ${holder} here`,
          };
        }
        if (here.username !== user.username) return { conflict: `user ${user.id} is here already as ${JSON.stringify(here.username)}` };
        if (here.balanceMicros !== user.balanceMicros) {
          return {
            conflict: `user ${user.id} is here already with a balance of ${microsToPoints(here.balanceMicros)}, not ${microsToPoints(user.balanceMicros)}`,
          };
        }
        return inserted.has(index) ? 'written' : 'there';
      });
    },

    async apiKeys(keys) {
      const { inserted } = await accounts.insertMissingApiKeys(keys);
      const owners = await accounts.apiKeyOwners(keys.map((key) => key.hash));
      return keys.map((key, index) => {
        const owner = owners.get(key.hash);
        if (owner !== key.userId) return { conflict: `this key belongs to user ${owner ?? '?'} here` };
        return inserted.has(index) ? 'written' : 'there';
      });
    },

    async gifts(gifts) {
      await accounts.markGiftsGranted(gifts);
      const { inserted } = await giftGrants.recordGranted(gifts.map((grant) => ({ ...grant, points: GIFT_POINTS[grant.gift] })));
      return gifts.map((_gift, index) => (inserted.has(index) ? 'written' : 'there'));
    },

    async conversations(batch) {
      const { inserted } = await conversations.insertMissing(batch);
      return batch.map((_conversation, index) => (inserted.has(index) ? 'written' : 'there'));
    },

    reserveConversationNumbers: (highest) => accounts.reserveConversationIds(highest),
  };
}
