import type { Db, Document, Timestamp } from 'mongodb';

import type { AccountStore } from '../accounts/account.store.js';
import {
  BALANCE_FIELD_NAMES,
  BALANCE_PARTS,
  type StoredBalance,
  storedBalanceOf,
  storedBalancePart,
  totalMicros as total,
} from '../accounts/index.js';
import { microsToPoints } from '../accounts/points.js';
import { SUBSCRIPTION_INBOX_CAPACITY } from '../limits.js';
import type { Logger } from '../logger.js';
import { ENDED, handOver, type Made, type ResultReader, StreamOf } from '../shared/iteration.js';
import { ChangeFeed, type FeedObserver } from './change-feed.js';
import { type Inbox, MISSED, type Missed } from './inbox.js';

/** What one write left of a user's balance (the fields it wrote), and when that write happened. */
export interface BalanceChange {
  /** The fields the write set, in micro-points; those it did not touch are absent. */
  written: Partial<StoredBalance>;
  /** The write's cluster time. */
  at: Timestamp;
  /** When this process received it (performance.now()). */
  receivedAt: number;
}

/**
 * One value of a user's balance as a subscriber is sent it. Subscribers of one user that apply
 * one change alike get one object for it (see `SharedExecutions`); a value read from the
 * database is an object of its own.
 */
export interface BalanceEvent {
  readonly points: number;
}

/** The event each change led to, by change (the object the feed hands to every listener of its user). */
const eventsByChange = new WeakMap<BalanceChange, BalanceEvent>();

/** The stored fields of a balance (`accounts/user.model.ts`): the feed matches and reads these names only. */
const BALANCE_FIELDS = BALANCE_PARTS.map((part) => BALANCE_FIELD_NAMES[part]);

/**
 * The change stream's pipeline: inserts and replacements, and updates that write or remove a
 * field of the balance (`balanceMicros`, and `balanceUnits` of older writers), each reduced to
 * its owner's `id` and those fields.
 */
export const BALANCE_CHANGES: Document[] = [
  {
    $match: {
      $or: [
        { operationType: { $in: ['insert', 'replace'] } },
        ...BALANCE_FIELDS.map((field) => ({ operationType: 'update', [`updateDescription.updatedFields.${field}`]: { $exists: true } })),
        { operationType: 'update', 'updateDescription.removedFields': { $in: BALANCE_FIELDS } },
      ],
    },
  },
  {
    $project: {
      operationType: 1,
      clusterTime: 1,
      'fullDocument.id': 1,
      ...Object.fromEntries(BALANCE_FIELDS.map((field) => [`fullDocument.${field}`, 1])),
      ...Object.fromEntries(BALANCE_FIELDS.map((field) => [`updateDescription.updatedFields.${field}`, 1])),
      'updateDescription.removedFields': 1,
    },
  },
];

/**
 * The change stream of the users collection, through `BALANCE_CHANGES`. `updateLookup` finds
 * whose document an update changed (its `id`); the fields themselves come from the update's own
 * description, which is exactly what that write left.
 */
export function balanceFeed(db: Db, collection: string, logger: Logger, observer: FeedObserver): ChangeFeed<BalanceChange> {
  return new ChangeFeed<BalanceChange>({
    collection: db.collection(collection),
    pipeline: BALANCE_CHANGES,
    streamOptions: { fullDocument: 'updateLookup' },
    route: routeBalanceChange,
    logger,
    observer,
  });
}

/** The user a change event (as `BALANCE_CHANGES` leaves it) is of, and what it wrote of the balance; null for one of no user. */
export function routeBalanceChange(change: Document): { owner: number; change: BalanceChange } | null {
  const owner: unknown = change.fullDocument?.id;
  if (!isUserId(owner)) return null;
  const written = change.operationType === 'update' ? writtenBy(change.updateDescription ?? {}) : wholeBalance(change.fullDocument);
  if (written.micros !== undefined && !Number.isSafeInteger(written.micros)) return null;
  return { owner, change: { written, at: change.clusterTime as Timestamp, receivedAt: performance.now() } };
}

/** The balance fields an update set, a removed one counting 0. */
function writtenBy({
  updatedFields = {},
  removedFields = [],
}: {
  updatedFields?: Document;
  removedFields?: string[];
}): Partial<StoredBalance> {
  const written: Partial<StoredBalance> = {};
  for (const part of BALANCE_PARTS) {
    const field = BALANCE_FIELD_NAMES[part];
    if (field in updatedFields || removedFields.includes(field)) written[part] = storedBalancePart(part, updatedFields[field]);
  }
  return written;
}

/** Both fields of a document written whole (an insert or a replacement). */
function wholeBalance(user: Document | undefined): StoredBalance {
  return storedBalanceOf(user);
}

/** A user's balance in points: its value now, then each new value, in the order of the writes (see `BalanceUpdates`). */
export async function balanceUpdates(
  feed: ChangeFeed<BalanceChange>,
  accounts: AccountStore,
  userId: number,
): Promise<AsyncIterableIterator<BalanceEvent>> {
  return new BalanceUpdates(await feed.inbox(userId, SUBSCRIPTION_INBOX_CAPACITY), accounts, userId);
}

/**
 * A user's balance in points: its value now, then each new value, in the order of the writes.
 *
 * The listener (the inbox) is in place before the balance is read, so no change can fall between
 * the two. The read says when it happened (`operationTime`): a change after that is exactly the
 * new balance; a change at or before it is already in the read if this process knew of it before
 * reading, and otherwise may or may not be (it committed while the read ran), so the balance is
 * read again. A subscriber that fell behind reads it again too. Equal values are sent once.
 *
 * A class rather than an async generator: one event reaches every subscriber of a user at once,
 * and each step of a generator costs promise jobs of its own. Its reader asks for one value at a
 * time, as `for await` does; whichever way it ends, its inbox closes, which stops its listener.
 */
class BalanceUpdates extends StreamOf<BalanceChange | Missed, BalanceEvent> {
  private balance: StoredBalance | undefined;
  /** When the balance was read (the read's `operationTime`). */
  private at: Timestamp | undefined;
  /**
   * Whether a change after the read has come: the feed hands changes in the order of their
   * cluster times, so every later one is after it too, and needs no comparing.
   */
  private pastRead = false;
  /** When this process began its last read (performance.now()). */
  private readStartedAt = 0;
  /** The total last sent, in micro-points. */
  private sent = 0;

  constructor(
    private readonly inbox: Inbox<BalanceChange>,
    private readonly accounts: AccountStore,
    private readonly userId: number,
  ) {
    super();
  }

  protected readNext(reader: ResultReader<BalanceEvent>): void {
    if (this.balance !== undefined) return this.readThrough(this.inbox, reader);
    const first = this.readBalance().then((): IteratorResult<BalanceEvent> => {
      this.sent = total(this.balance!);
      return { value: { points: microsToPoints(this.sent) }, done: false };
    }, this.failedRead);
    handOver(first, reader);
  }

  protected release(): void {
    this.inbox.close();
  }

  private async readBalance(): Promise<void> {
    this.readStartedAt = performance.now();
    this.pastRead = false;
    ({ balance: this.balance, at: this.at } = await this.accounts.balanceAt(this.userId));
  }

  /** A change applied: the new value, or (the same value) the next one; a balance read again when the change may be in it already. */
  protected step(result: IteratorResult<BalanceChange | Missed>): Made<BalanceEvent> {
    if (result.done) return ENDED;
    const change = result.value;
    if (change !== MISSED && this.at !== undefined && (this.pastRead || change.at.greaterThan(this.at))) {
      this.pastRead = true;
      this.balance = { ...this.balance!, ...change.written };
      return this.newValue(change);
    }
    if (change === MISSED || this.at === undefined || change.receivedAt >= this.readStartedAt) {
      return this.readBalance().then(() => this.newValue(undefined), this.failedRead);
    }
    return this.newValue(undefined);
  }

  /** The balance's new value, or (the same value as last sent) the next one. */
  private newValue(applied: BalanceChange | undefined): Made<BalanceEvent> {
    const now = total(this.balance!);
    if (now === this.sent) return this.next();
    this.sent = now;
    return { value: eventOf(applied, microsToPoints(now)), done: false };
  }

  /** A read that failed ends it (its listener stops) with that failure. */
  private readonly failedRead = (error: unknown): never => {
    void this.end();
    throw error;
  };

  protected override failed(error: unknown): never {
    return this.failedRead(error);
  }
}

/** The event of a value: the one of `change` when it led to this value, a new object otherwise (a value read, or a change applied to another balance). */
function eventOf(change: BalanceChange | undefined, points: number): BalanceEvent {
  const known = change && eventsByChange.get(change);
  if (known?.points === points) return known;
  const event = { points };
  if (change !== undefined && known === undefined) eventsByChange.set(change, event);
  return event;
}

function isUserId(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) > 0;
}
