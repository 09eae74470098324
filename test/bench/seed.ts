import type { Db } from 'mongodb';

import { conversationBatches, type DatasetSize, userDocument } from './dataset.js';

const BATCH_SIZE = 2_000;
/** Batches in flight at once: enough to keep generation and insertion overlapping. */
const IN_FLIGHT = 2;

/**
 * Inserts users `[firstUser, endUser)` and all their conversations with
 * `insertMany` batches, straight through the driver (the gateway has already
 * created its indexes). Returns how many conversations were inserted.
 */
export async function seedUsers(db: Db, counts: readonly number[], firstUser: number, endUser: number): Promise<number> {
  const users = [];
  for (let userId = firstUser; userId < endUser; userId++) users.push(userDocument(userId, counts[userId - 1]!));
  for (let at = 0; at < users.length; at += BATCH_SIZE) {
    await db.collection('users').insertMany(users.slice(at, at + BATCH_SIZE), { ordered: false });
  }

  const conversations = db.collection('conversations');
  const pending = new Set<Promise<unknown>>();
  let inserted = 0;
  for (const batch of conversationBatches(counts, firstUser, endUser, BATCH_SIZE)) {
    const insert = conversations.insertMany(batch, { ordered: false }).then(() => {
      inserted += batch.length;
      pending.delete(insert);
    });
    pending.add(insert);
    if (pending.size >= IN_FLIGHT) await Promise.race(pending);
  }
  await Promise.all(pending);
  return inserted;
}

/** How many users, from the first, hold 1% of all conversations: the small data set the scale target compares with. */
export function smallUserCount(counts: readonly number[], size: DatasetSize): number {
  let conversations = 0;
  for (let users = 1; users <= counts.length; users++) {
    conversations += counts[users - 1]!;
    if (conversations >= size.conversations / 100) return users;
  }
  return counts.length;
}
