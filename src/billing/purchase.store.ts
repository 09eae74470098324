import type { DatabaseCommands } from '../db/database-commands.js';
import { isDuplicateKey } from '../db/duplicate-key.js';
import { type DeclineReason, type PurchaseModel, type PurchaseRecord, type PurchaseState, UNFINISHED_STATES } from './purchase.model.js';

/** What a purchase is worked on with: the order, who pays it and what it buys (and the buyer's key for it, if any). */
export type PurchaseTerms = Pick<PurchaseRecord, 'orderId' | 'userId' | 'username' | 'quota' | 'amount' | 'idempotencyKey' | 'traceparent'>;

export type PurchaseClose = { state: 'credited'; late: boolean } | { state: 'declined'; reason: DeclineReason };

/** Counts read at scrape time for the metrics. */
export interface PurchaseSummary {
  opened: number;
  pending: number;
  crediting: number;
  needingReview: number;
  /** When the oldest unfinished purchase was opened. */
  oldestOpenedAt: Date | undefined;
}

const unfinished = { $in: UNFINISHED_STATES };

/** The only code that touches the purchases collection. Every change of state is one conditional update. */
export class PurchaseStore {
  constructor(
    private readonly purchases: PurchaseModel,
    private readonly commands: DatabaseCommands,
  ) {}

  /**
   * Records a new purchase as `opened`, leased to `owner`. False, with nothing written, when its
   * buyer's idempotency key is held by another purchase: of several inserts racing with one key,
   * the unique index lets exactly one through.
   */
  async open(terms: PurchaseTerms, owner: string, now: Date, leaseUntil: Date): Promise<boolean> {
    const { idempotencyKey, ...rest } = terms;
    try {
      await this.commands.time(
        'insert',
        this.purchases.create({
          ...rest,
          ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
          state: 'opened',
          openedAt: now,
          checks: 0,
          nextCheckAt: leaseUntil,
          leaseOwner: owner,
        }),
      );
      return true;
    } catch (error) {
      if (idempotencyKey === undefined || !isDuplicateKey(error)) throw error;
      return false;
    }
  }

  /** The purchase holding a caller's idempotency key, if any. */
  findByKey(userId: number, idempotencyKey: string): Promise<PurchaseRecord | null> {
    return this.commands.time('find', this.purchases.findOne({ userId, idempotencyKey }, { _id: 0 }).lean<PurchaseRecord>());
  }

  /** Frees the idempotency key a purchase holds, so that the next buy with it opens a purchase of its own. */
  async releaseKey(orderId: string): Promise<void> {
    await this.commands.time('update', this.purchases.updateOne({ orderId }, { $unset: { idempotencyKey: 1 } }));
  }

  /** `opened` → `pending`, only while `owner` still holds it; false when a sweep closed it first. */
  async markPending(orderId: string, owner: string, leaseUntil: Date): Promise<boolean> {
    const result = await this.commands.time(
      'update',
      this.purchases.updateOne({ orderId, state: 'opened', leaseOwner: owner }, { $set: { state: 'pending', nextCheckAt: leaseUntil } }),
    );
    return result.modifiedCount === 1;
  }

  /** `pending` → `crediting`, once the provider said the order is paid; false when it had left `pending`. */
  async startCrediting(orderId: string, leaseUntil: Date): Promise<boolean> {
    const result = await this.commands.time(
      'update',
      this.purchases.updateOne(
        { orderId, state: 'pending' },
        { $set: { state: 'crediting', nextCheckAt: leaseUntil }, $unset: { leaseOwner: 1 } },
      ),
    );
    return result.modifiedCount === 1;
  }

  /** Takes an unfinished purchase that is due, in one atomic update: of several claiming at once, one gets it. */
  claimDue(orderId: string, owner: string, now: Date, leaseUntil: Date): Promise<PurchaseRecord | null> {
    return this.claim({ orderId, state: unfinished, nextCheckAt: { $lte: now } }, owner, leaseUntil);
  }

  /** Takes a pending purchase whatever its schedule (an operator asked to check it now). */
  claimPending(orderId: string, owner: string, leaseUntil: Date): Promise<PurchaseRecord | null> {
    return this.claim({ orderId, state: 'pending' }, owner, leaseUntil);
  }

  private claim(filter: object, owner: string, leaseUntil: Date): Promise<PurchaseRecord | null> {
    return this.commands.time(
      'findAndModify',
      this.purchases
        .findOneAndUpdate(
          filter,
          { $set: { leaseOwner: owner, nextCheckAt: leaseUntil } },
          { returnDocument: 'after', projection: { _id: 0 } },
        )
        .lean<PurchaseRecord>(),
    );
  }

  /** Gives a pending purchase back, due again at `nextCheckAt`; only while `owner` still holds it (then true). */
  async postpone(
    orderId: string,
    owner: string,
    next: { nextCheckAt: Date; lastCheck: string; counted: boolean; reviewSince?: Date },
  ): Promise<boolean> {
    const fields = {
      nextCheckAt: next.nextCheckAt,
      lastCheck: next.lastCheck,
      ...(next.reviewSince ? { reviewSince: next.reviewSince } : {}),
    };
    const result = await this.commands.time(
      'update',
      this.purchases.updateOne(
        { orderId, state: 'pending', leaseOwner: owner },
        { $set: fields, $inc: { checks: next.counted ? 1 : 0 }, $unset: { leaseOwner: 1 } },
      ),
    );
    return result.modifiedCount === 1;
  }

  /** Moves a purchase from one of `from` to its final state; true for the one call that did it. */
  async close(orderId: string, from: readonly PurchaseState[], outcome: PurchaseClose, now: Date): Promise<boolean> {
    const fields =
      outcome.state === 'declined'
        ? { state: outcome.state, declineReason: outcome.reason, closedAt: now }
        : { state: outcome.state, closedAt: now, ...(outcome.late ? { creditedLate: true } : {}) };
    const result = await this.commands.time(
      'update',
      this.purchases.updateOne(
        { orderId, state: { $in: from } },
        {
          $set: fields,
          $unset: { nextCheckAt: 1, leaseOwner: 1, lastCheck: 1, ...(outcome.state === 'credited' ? { declineReason: 1 } : {}) },
        },
      ),
    );
    return result.modifiedCount === 1;
  }

  find(orderId: string): Promise<PurchaseRecord | null> {
    return this.commands.time('find', this.purchases.findOne({ orderId }, { _id: 0 }).lean<PurchaseRecord>());
  }

  findMany(orderIds: readonly string[]): Promise<PurchaseRecord[]> {
    return this.commands.time('find', this.purchases.find({ orderId: { $in: orderIds } }, { _id: 0 }).lean<PurchaseRecord[]>());
  }

  /** Order ids of unfinished purchases due by `now`, most overdue first. */
  async due(now: Date, limit: number): Promise<string[]> {
    const purchases = await this.commands.time(
      'find',
      this.purchases
        .find({ state: unfinished, nextCheckAt: { $lte: now } }, { _id: 0, orderId: 1 })
        .sort({ nextCheckAt: 1 })
        .limit(limit)
        .lean(),
    );
    return purchases.map((purchase) => purchase.orderId);
  }

  /** When the next unfinished purchase is due; undefined when there is none. */
  async nextDue(): Promise<Date | undefined> {
    const [first] = await this.commands.time(
      'find',
      this.purchases.find({ state: unfinished }, { _id: 0, nextCheckAt: 1 }).sort({ nextCheckAt: 1 }).limit(1).lean(),
    );
    return first?.nextCheckAt;
  }

  /** Unfinished purchases, oldest first: all of them, or those needing review; of one user when given. */
  unfinished(filter: { needingReview: boolean; userId: number | undefined; limit: number }): Promise<PurchaseRecord[]> {
    return this.commands.time(
      'find',
      this.purchases
        .find(
          {
            state: unfinished,
            ...(filter.needingReview ? { reviewSince: { $exists: true } } : {}),
            ...(filter.userId === undefined ? {} : { userId: filter.userId }),
          },
          { _id: 0 },
        )
        .sort({ openedAt: 1 })
        .limit(filter.limit)
        .lean<PurchaseRecord[]>(),
    );
  }

  async summary(): Promise<PurchaseSummary> {
    const groups = await this.commands.time(
      'aggregate',
      this.purchases.aggregate<{ _id: (typeof UNFINISHED_STATES)[number]; count: number; review: number; oldest: Date }>([
        { $match: { state: unfinished } },
        {
          $group: {
            _id: '$state',
            count: { $sum: 1 },
            review: { $sum: { $cond: [{ $ifNull: ['$reviewSince', false] }, 1, 0] } },
            oldest: { $min: '$openedAt' },
          },
        },
      ]),
    );
    const summary: PurchaseSummary = { opened: 0, pending: 0, crediting: 0, needingReview: 0, oldestOpenedAt: undefined };
    for (const group of groups) {
      summary[group._id] = group.count;
      summary.needingReview += group.review;
      if (summary.oldestOpenedAt === undefined || group.oldest < summary.oldestOpenedAt) summary.oldestOpenedAt = group.oldest;
    }
    return summary;
  }
}
