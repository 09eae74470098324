import type { DatabaseCommands } from '../db/database-commands.js';
import { isDuplicateKey } from '../db/duplicate-key.js';
import { insertMissing, type InsertMissingResult } from '../db/insert-missing.js';
import type { Gift } from './gift.js';
import type { GiftGrantModel } from './gift-grant.model.js';

/** The only code that touches the giftGrants collection. */
export class GiftGrantStore {
  constructor(
    private readonly grants: GiftGrantModel,
    private readonly commands: DatabaseCommands,
  ) {}

  /**
   * Claims a gift for a user by inserting its grant; the unique `(userId, gift)` index lets
   * exactly one insert succeed, ever. Answers whether the points still have to be credited:
   * true for a new claim and for an earlier claim whose credit never completed.
   */
  async claim(userId: number, gift: Gift, points: number): Promise<boolean> {
    try {
      await this.commands.time('insert', this.grants.create({ userId, gift, points, credited: false }));
      return true;
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
    const earlier = await this.commands.time('find', this.grants.findOne({ userId, gift }, { _id: 0, credited: 1 }).lean());
    return earlier?.credited === false;
  }

  /** Gifts claimed by a user whose credit was never recorded as done (a crash cut it off). */
  async uncredited(userId: number): Promise<Gift[]> {
    const grants = await this.commands.time('find', this.grants.find({ userId, credited: false }, { _id: 0, gift: 1 }).lean());
    return grants.map((grant) => grant.gift);
  }

  /**
   * Records gifts granted elsewhere (a legacy database) as claimed and credited, so they are never
   * granted again; a claim already there is left as it is.
   */
  async recordGranted(grants: readonly { userId: number; gift: Gift; points: number }[]): Promise<InsertMissingResult> {
    return insertMissing(
      this.commands,
      this.grants,
      grants.map(({ userId, gift, points }) => ({ key: { userId, gift }, document: { userId, gift, points, credited: true } })),
    );
  }

  async markCredited(userId: number, gift: Gift): Promise<void> {
    await this.commands.time('update', this.grants.updateOne({ userId, gift }, { $set: { credited: true } }));
  }
}
