import type { Timestamp } from 'mongodb';

import type { Gift } from '../billing/gift.js';
import type { DatabaseCommands } from '../db/database-commands.js';
import { insertMissing, type InsertMissingResult } from '../db/insert-missing.js';
import type { ApiKeyModel } from './api-key.model.js';
import { BALANCE_FIELDS, balanceMicrosOf, type StoredBalance, storedBalanceOf, type UserModel } from './user.model.js';

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
    private readonly commands: DatabaseCommands,
  ) {}

  /** The balance in micro-points (none without a record) and the orders still awaiting credit, read by one command. */
  async balance(userId: number): Promise<{ micros: number; pendingOrders: string[] }> {
    const user = await this.commands.time(
      'find',
      this.users.findOne({ id: userId }, { _id: 0, ...BALANCE_FIELDS, pendingOrders: 1 }).lean(),
    );
    return { micros: balanceMicrosOf(user), pendingOrders: user?.pendingOrders ?? [] };
  }

  /**
   * The balance in micro-points, with the cluster time the read happened at (the
   * server's `operationTime`; absent on a standalone server): every write at or before that time
   * may be in it, no later one is. A balance subscription orders change events by it.
   */
  async balanceAt(userId: number): Promise<{ balance: StoredBalance; at: Timestamp | undefined }> {
    const session = await this.users.startSession();
    try {
      const user = await this.commands.time(
        'find',
        this.users
          .findOne({ id: userId }, { _id: 0, ...BALANCE_FIELDS })
          .session(session)
          .lean(),
      );
      return { balance: storedBalanceOf(user), at: session.operationTime };
    } finally {
      await session.endSession();
    }
  }

  /** Null when the user has no record (and so no name the provider could know). */
  async billingAccount(userId: number): Promise<BillingAccount | null> {
    const user = await this.commands.time(
      'find',
      this.users.findOne({ id: userId }, { _id: 0, username: 1, pendingOrders: 1, grantedGifts: 1 }).lean(),
    );
    if (!user) return null;
    return { username: user.username, pendingOrders: user.pendingOrders ?? [], grantedGifts: user.grantedGifts ?? [] };
  }

  /** Marks an order as awaiting credit; false when the user has no record. */
  async addPendingOrder(userId: number, order: string): Promise<boolean> {
    const result = await this.commands.time('update', this.users.updateOne({ id: userId }, { $addToSet: { pendingOrders: order } }));
    return result.matchedCount === 1;
  }

  /**
   * Credits a paid order: adds `micros` and removes the order from the pending set in one
   * single-document update that matches only while the order is pending, so a second credit of
   * the same order, from any request or instance, matches nothing. Returns the new balance, or
   * null when the order was not pending (already credited or dropped).
   */
  async creditOrder(userId: number, order: string, micros: number): Promise<number | null> {
    const user = await this.commands.time(
      'findAndModify',
      this.users
        .findOneAndUpdate(
          { id: userId, pendingOrders: order },
          { $inc: { balanceMicros: micros }, $pull: { pendingOrders: order } },
          { returnDocument: 'after', projection: { _id: 0, ...BALANCE_FIELDS } },
        )
        .lean(),
    );
    return user === null ? null : balanceMicrosOf(user);
  }

  /** Removes an order that was not paid from the pending set, crediting nothing. */
  async dropOrder(userId: number, order: string): Promise<void> {
    await this.commands.time('update', this.users.updateOne({ id: userId }, { $pull: { pendingOrders: order } }));
  }

  /**
   * Credits an order that had been declined and was found paid later, unless it was credited so
   * before: the guard is the order's place in `lateCredits`, added in the same update.
   */
  async creditLateOrder(userId: number, order: string, micros: number): Promise<void> {
    await this.commands.time(
      'update',
      this.users.updateOne(
        { id: userId, lateCredits: { $ne: order } },
        { $inc: { balanceMicros: micros }, $addToSet: { lateCredits: order } },
      ),
    );
  }

  /** Credits a gift package unless this user already has it; true when this call credited it. */
  async creditGift(userId: number, gift: Gift, micros: number): Promise<boolean> {
    const result = await this.commands.time(
      'update',
      this.users.updateOne(
        { id: userId, grantedGifts: { $ne: gift } },
        { $inc: { balanceMicros: micros }, $addToSet: { grantedGifts: gift } },
      ),
    );
    return result.modifiedCount === 1;
  }

  async userIdForApiKeyHash(hash: string): Promise<number | null> {
    const key = await this.commands.time('find', this.apiKeys.findOne({ hash }, { _id: 0, userId: 1 }).lean());
    return key?.userId ?? null;
  }

  /** Creates or updates users (by id), setting each balance to the given value. One command per call. */
  async upsertUsers(users: readonly { id: number; username: string; balanceMicros: number }[]): Promise<void> {
    if (users.length === 0) return;
    await this.commands.time(
      'update',
      this.users.bulkWrite(
        users.map((user) => ({
          updateOne: {
            filter: { id: user.id },
            // The balance given is the whole balance: none is left in the old unit beside it.
            update: {
              $set: { username: user.username, balanceMicros: user.balanceMicros },
              $unset: { balanceUnits: '' },
              $setOnInsert: { lastConversationId: 0 },
            },
            upsert: true,
          },
        })),
        { ordered: false },
      ),
    );
  }

  async addApiKeys(keys: readonly { hash: string; userId: number }[]): Promise<void> {
    if (keys.length === 0) return;
    await this.commands.time(
      'update',
      this.apiKeys.bulkWrite(
        keys.map(({ hash, userId }) => ({ updateOne: { filter: { hash }, update: { $set: { userId } }, upsert: true } })),
        { ordered: false },
      ),
    );
  }

  /**
   * Moves each user's conversation-id sequence to at least the given id, so ids loaded are never
   * handed out again. A sequence already there is left as it is, timestamps included.
   */
  async reserveConversationIds(highestIds: ReadonlyMap<number, number>): Promise<void> {
    if (highestIds.size === 0) return;
    await this.commands.time(
      'update',
      this.users.bulkWrite(
        [...highestIds].map(([userId, id]) => ({
          updateOne: { filter: { id: userId }, update: { $max: { lastConversationId: id } }, timestamps: false },
        })),
        { ordered: false },
      ),
    );
  }

  /**
   * Creates the users not there yet (by id), with their balances; a user already there is left as
   * it is. A user whose username another user holds is among the `duplicates`.
   */
  async insertMissingUsers(users: readonly { id: number; username: string; balanceMicros: number }[]): Promise<InsertMissingResult> {
    return insertMissing(
      this.commands,
      this.users,
      users.map((user) => ({ key: { id: user.id }, document: { ...user, lastConversationId: 0 } })),
    );
  }

  /** The username and balance of each of these users that has a record. */
  async usersById(ids: readonly number[]): Promise<Map<number, { username: string; balanceMicros: number }>> {
    if (ids.length === 0) return new Map();
    const users = await this.commands.time(
      'find',
      this.users.find({ id: { $in: ids } }, { _id: 0, id: 1, username: 1, ...BALANCE_FIELDS }).lean(),
    );
    return new Map(users.map((user) => [user.id, { username: user.username, balanceMicros: balanceMicrosOf(user) }]));
  }

  /** Adds the API keys (by hash) not there yet; a key already there keeps its owner. */
  async insertMissingApiKeys(keys: readonly { hash: string; userId: number }[]): Promise<InsertMissingResult> {
    return insertMissing(
      this.commands,
      this.apiKeys,
      keys.map((key) => ({ key: { hash: key.hash }, document: key })),
    );
  }

  /** Records gift packages as credited, so they are never credited again; the balances are left as they are. */
  async markGiftsGranted(gifts: readonly { userId: number; gift: Gift }[]): Promise<void> {
    if (gifts.length === 0) return;
    await this.commands.time(
      'update',
      this.users.bulkWrite(
        gifts.map(({ userId, gift }) => ({
          updateOne: { filter: { id: userId }, update: { $addToSet: { grantedGifts: gift } }, timestamps: false },
        })),
        { ordered: false },
      ),
    );
  }

  /** Which of these users have a record. */
  async existingUserIds(ids: readonly number[]): Promise<Set<number>> {
    if (ids.length === 0) return new Set();
    const users = await this.commands.time('find', this.users.find({ id: { $in: ids } }, { _id: 0, id: 1 }).lean());
    return new Set(users.map((user) => user.id));
  }

  /** The user id holding each of these usernames, for those taken. */
  async userIdsByUsername(usernames: readonly string[]): Promise<Map<string, number>> {
    if (usernames.length === 0) return new Map();
    const users = await this.commands.time(
      'find',
      this.users.find({ username: { $in: usernames } }, { _id: 0, id: 1, username: 1 }).lean(),
    );
    return new Map(users.map((user) => [user.username, user.id]));
  }

  /** The user id owning each of these API key hashes, for those known. */
  async apiKeyOwners(hashes: readonly string[]): Promise<Map<string, number>> {
    if (hashes.length === 0) return new Map();
    const keys = await this.commands.time('find', this.apiKeys.find({ hash: { $in: hashes } }, { _id: 0, hash: 1, userId: 1 }).lean());
    return new Map(keys.map((key) => [key.hash, key.userId]));
  }
}
