import type { DeclineReason, PurchaseModel, PurchaseRecord } from './purchase.model.js';

/** What a purchase is worked on with: the order, who pays it and what it buys. */
export type PurchaseTerms = Pick<PurchaseRecord, 'orderId' | 'userId' | 'username' | 'quota' | 'amount' | 'payDeadline'>;

/** No lease: anyone may claim the purchase. */
const NO_LEASE = new Date(0);

/** The only code that touches the purchases collection. */
export class PurchaseStore {
  constructor(private readonly purchases: PurchaseModel) {}

  /** Records a new purchase as pending, leased to `owner` until its pay deadline. */
  async open(terms: PurchaseTerms, owner: string): Promise<void> {
    await this.purchases.create({ ...terms, state: 'pending', attempts: 1, leaseOwner: owner, leaseUntil: terms.payDeadline });
  }

  /**
   * Takes the lease of a pending purchase whose lease has run out, in one atomic update: of
   * several instances or requests claiming at once, exactly one gets the purchase.
   */
  async claim(orderId: string, owner: string, now: Date, until: Date): Promise<PurchaseTerms | null> {
    return this.purchases
      .findOneAndUpdate(
        { orderId, state: 'pending', leaseUntil: { $lt: now } },
        { $set: { leaseOwner: owner, leaseUntil: until }, $inc: { attempts: 1 } },
        { returnDocument: 'after', projection: { _id: 0, orderId: 1, userId: 1, username: 1, quota: 1, amount: 1, payDeadline: 1 } },
      )
      .lean<PurchaseTerms>();
  }

  /** Gives the lease back so that the purchase can be settled at once by anyone. */
  async release(orderId: string, owner: string): Promise<void> {
    await this.purchases.updateOne(
      { orderId, state: 'pending', leaseOwner: owner },
      { $set: { leaseUntil: NO_LEASE }, $unset: { leaseOwner: 1 } },
    );
  }

  /** Records the final state; the user's balance was settled before this is called. */
  async finish(orderId: string, outcome: { state: 'credited' } | { state: 'declined'; reason: DeclineReason }): Promise<void> {
    const fields = outcome.state === 'declined' ? { state: outcome.state, declineReason: outcome.reason } : { state: outcome.state };
    await this.purchases.updateOne({ orderId, state: 'pending' }, { $set: fields, $unset: { leaseOwner: 1, leaseUntil: 1 } });
  }

  /** Order ids of pending purchases nobody holds a lease on, oldest lease first. */
  async unleased(now: Date, limit: number): Promise<string[]> {
    const purchases = await this.purchases
      .find({ state: 'pending', leaseUntil: { $lt: now } }, { _id: 0, orderId: 1 })
      .sort({ leaseUntil: 1 })
      .limit(limit)
      .lean();
    return purchases.map((purchase) => purchase.orderId);
  }
}
