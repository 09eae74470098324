import type { Db, Document, Timestamp } from 'mongodb';

import type { AccountStore } from '../accounts/account.store.js';
import { microsToPoints } from '../accounts/points.js';
import type { Logger } from '../logger.js';
import { ChangeFeed, type FeedObserver } from './change-feed.js';
import { Inbox, MISSED } from './inbox.js';
import { endingWith } from './iterators.js';

/** A user's balance as one write left it, and when that write happened. */
export interface BalanceChange {
  /** In micro-points. */
  micros: number;
  /** The write's cluster time. */
  at: Timestamp;
  /** When this process received it (performance.now()). */
  receivedAt: number;
}

/** Changes a slow subscriber may have waiting; past that, it reads the balance again instead. */
const INBOX_CAPACITY = 100;

/**
 * The change stream of the users collection: inserts and replacements, and updates that write
 * or remove the balance. `updateLookup` finds whose document an update changed (its `id`); the
 * balance itself comes from the update's own description, which is exactly what that write left.
 */
export function balanceFeed(db: Db, collection: string, logger: Logger, observer: FeedObserver): ChangeFeed<BalanceChange> {
  return new ChangeFeed<BalanceChange>({
    collection: db.collection(collection),
    pipeline: [
      {
        $match: {
          $or: [
            { operationType: { $in: ['insert', 'replace'] } },
            { operationType: 'update', 'updateDescription.updatedFields.balanceMicros': { $exists: true } },
            { operationType: 'update', 'updateDescription.removedFields': 'balanceMicros' },
          ],
        },
      },
      {
        $project: {
          operationType: 1,
          clusterTime: 1,
          'fullDocument.id': 1,
          'fullDocument.balanceMicros': 1,
          'updateDescription.updatedFields.balanceMicros': 1,
        },
      },
    ],
    streamOptions: { fullDocument: 'updateLookup' },
    route: routeBalanceChange,
    logger,
    observer,
  });
}

function routeBalanceChange(change: Document): { owner: number; change: BalanceChange } | null {
  const owner: unknown = change.fullDocument?.id;
  // An update that matched without writing the balance removed it: the balance is 0 then.
  const micros: unknown =
    change.operationType === 'update'
      ? (change.updateDescription?.updatedFields?.balanceMicros ?? 0)
      : (change.fullDocument?.balanceMicros ?? 0);
  if (!isUserId(owner) || typeof micros !== 'number' || !Number.isFinite(micros)) return null;
  return { owner, change: { micros, at: change.clusterTime as Timestamp, receivedAt: performance.now() } };
}

/**
 * A user's balance in points: its value now, then each new value, in the order of the writes.
 *
 * The listener is in place before the balance is read, so no change can fall between the two.
 * The read says when it happened (`operationTime`): a change after that is exactly the new
 * balance; a change at or before it is already in the read if this process knew of it before
 * reading, and otherwise may or may not be (it committed while the read ran), so the balance
 * is read again. A subscriber that fell behind reads it again too. Equal values are sent once.
 */
export async function balanceUpdates(
  feed: ChangeFeed<BalanceChange>,
  accounts: AccountStore,
  userId: number,
): Promise<AsyncIterableIterator<number>> {
  const inbox = new Inbox<BalanceChange>(INBOX_CAPACITY);
  const stopListening = await feed.listen(userId, inbox);
  async function* points(): AsyncGenerator<number> {
    let readStartedAt = performance.now();
    let { micros, at } = await accounts.balanceAt(userId);
    let sent = micros;
    yield microsToPoints(micros);
    for await (const change of inbox) {
      if (change !== MISSED && at !== undefined && change.at.greaterThan(at)) {
        micros = change.micros;
      } else if (change === MISSED || at === undefined || change.receivedAt >= readStartedAt) {
        readStartedAt = performance.now();
        ({ micros, at } = await accounts.balanceAt(userId));
      }
      if (micros !== sent) {
        sent = micros;
        yield microsToPoints(micros);
      }
    }
  }
  return endingWith(points(), () => {
    stopListening();
    inbox.close();
  });
}

function isUserId(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) > 0;
}
