import type { Gift } from '../billing/gift.js';
import type { ApiKeyModel } from './api-key.model.js';
import type { UserModel } from './user.model.js';

/** What buying and gifts need to know of a user. */
export interface BillingAccount {
  /** The name the SSO provider knows the user by. */
  username: string;
  pendingOrders: string[];
  grantedGifts: Gift[];
}

/** Users and their API keys: the only code that touches those collections. */
export class AccountStore {
  constructor(
    private readonly users: UserModel,
    private readonly apiKeys: ApiKeyModel,
  ) {}

  /** The balance in ten-thousandths of a point (none without a record) and the orders still awaiting credit, read by one command. */
  async balance(userId: number): Promise<{ units: number; pendingOrders: string[] }> {
    const user = await this.users.findOne({ id: userId }, { _id: 0, balanceUnits: 1, pendingOrders: 1 }).lean();
    return { units: user?.balanceUnits ?? 0, pendingOrders: user?.pendingOrders ?? [] };
  }

  /** Null when the user has no record (and so no name the provider could know). */
  async billingAccount(userId: number): Promise<BillingAccount | null> {
    const user = await this.users
      .findOne({ id: userId }, { _id: 0, username: 1, pendingOrders: 1, grantedGifts: 1 })
      .lean();
    if (!user) return null;
    return { username: user.username, pendingOrders: user.pendingOrders ?? [], grantedGifts: user.grantedGifts ?? [] };
  }

  /** Marks an order as awaiting credit; false when the user has no record. */
  async addPendingOrder(userId: number, order: string): Promise<boolean> {
    const result = await this.users.updateOne({ id: userId }, { $addToSet: { pendingOrders: order } });
    return result.matchedCount === 1;
  }

  /**
   * Credits a paid order: adds `units` and removes the order from the pending set in one
   * single-document update that matches only while the order is pending, so a second credit of
   * the same order, from any request or instance, matches nothing. Returns the new balance, or
   * null when the order was not pending (already credited or dropped).
   */
  async creditOrder(userId: number, order: string, units: number): Promise<number | null> {
    const user = await this.users
      .findOneAndUpdate(
        { id: userId, pendingOrders: order },
        { $inc: { balanceUnits: units }, $pull: { pendingOrders: order } },
        { returnDocument: 'after', projection: { _id: 0, balanceUnits: 1 } },
      )
      .lean();
    return user?.balanceUnits ?? null;
  }

  /** Removes an order that was not paid from the pending set, crediting nothing. */
  async dropOrder(userId: number, order: string): Promise<void> {
    await this.users.updateOne({ id: userId }, { $pull: { pendingOrders: order } });
  }

  /**
   * Credits an order that had been declined and was found paid later, unless it was credited so
   * before: the guard is the order's place in `lateCredits`, added in the same update.
   */
  async creditLateOrder(userId: number, order: string, units: number): Promise<void> {
    await this.users.updateOne(
      { id: userId, lateCredits: { $ne: order } },
      { $inc: { balanceUnits: units }, $addToSet: { lateCredits: order } },
    );
  }

  /** Credits a gift package unless this user already has it; true when this call credited it. */
  async creditGift(userId: number, gift: Gift, units: number): Promise<boolean> {
    const result = await this.users.updateOne(
      { id: userId, grantedGifts: { $ne: gift } },
      { $inc: { balanceUnits: units }, $addToSet: { grantedGifts: gift } },
    );
    return result.modifiedCount === 1;
  }

  async userIdForApiKeyHash(hash: string): Promise<number | null> {
    const key = await this.apiKeys.findOne({ hash }, { _id: 0, userId: 1 }).lean();
    return key?.userId ?? null;
  }

  /** Creates or updates a user, setting the balance to the given value. */
  async upsertUser(user: { id: number; username: string; balanceUnits: number }): Promise<void> {
    await this.users.updateOne(
      { id: user.id },
      { $set: { username: user.username, balanceUnits: user.balanceUnits }, $setOnInsert: { lastConversationId: 0 } },
      { upsert: true },
    );
  }

  async addApiKey(hash: string, userId: number): Promise<void> {
    await this.apiKeys.updateOne({ hash }, { $set: { userId } }, { upsert: true });
  }

  /** Moves the user's conversation-id sequence to at least `id`. */
  async reserveConversationIds(userId: number, id: number): Promise<void> {
    await this.users.updateOne({ id: userId }, { $max: { lastConversationId: id } });
  }

  /** Takes the next conversation id of a user; a single atomic increment, so ids are never handed out twice. */
  async nextConversationId(userId: number): Promise<number> {
    const user = await this.users
      .findOneAndUpdate({ id: userId }, { $inc: { lastConversationId: 1 } }, { returnDocument: 'after', projection: { lastConversationId: 1 } })
      .lean();
    if (!user) throw new Error(`user ${userId} does not exist`);
    return user.lastConversationId;
  }
}
