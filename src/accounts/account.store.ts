import type { ApiKeyModel } from './api-key.model.js';
import type { UserModel } from './user.model.js';

/** Users and their API keys: the only code that touches those collections. */
export class AccountStore {
  constructor(
    private readonly users: UserModel,
    private readonly apiKeys: ApiKeyModel,
  ) {}

  /** The balance in ten-thousandths of a point; a user with no record has none. */
  async balanceUnits(userId: number): Promise<number> {
    const user = await this.users.findOne({ id: userId }, { _id: 0, balanceUnits: 1 }).lean();
    return user?.balanceUnits ?? 0;
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
      .findOneAndUpdate({ id: userId }, { $inc: { lastConversationId: 1 } }, { new: true, projection: { lastConversationId: 1 } })
      .lean();
    if (!user) throw new Error(`user ${userId} does not exist`);
    return user.lastConversationId;
  }
}
