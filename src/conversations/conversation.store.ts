import type { ConversationModel, ConversationRecord } from './conversation.model.js';

/** Everything but message bodies: what a page of conversations shows. */
const SUMMARY = { _id: 0, userId: 1, id: 1, name: 1, model: 1, enableWeb: 1 } as const;
const FULL = { ...SUMMARY, messages: 1 } as const;
const MESSAGES_ONLY = { _id: 0, id: 1, messages: 1 } as const;

/** The only code that touches the conversations collection. Every read is scoped to one owner. */
export class ConversationStore {
  constructor(private readonly conversations: ConversationModel) {}

  /** Newest first, without message bodies; `beforeId` continues after a previous page. */
  page(userId: number, limit: number, beforeId?: number): Promise<ConversationRecord[]> {
    const filter = beforeId === undefined ? { userId } : { userId, id: { $lt: beforeId } };
    return this.conversations.find(filter, SUMMARY).sort({ id: -1 }).limit(limit).lean<ConversationRecord[]>();
  }

  /** Whole conversations, messages included, in no particular order. */
  findMany(userId: number, ids: readonly number[]): Promise<ConversationRecord[]> {
    return this.conversations.find({ userId, id: { $in: ids } }, FULL).lean<ConversationRecord[]>();
  }

  messagesOf(userId: number, ids: readonly number[]): Promise<Pick<ConversationRecord, 'id' | 'messages'>[]> {
    return this.conversations
      .find({ userId, id: { $in: ids } }, MESSAGES_ONLY)
      .lean<Pick<ConversationRecord, 'id' | 'messages'>[]>();
  }

  count(userId: number): Promise<number> {
    return this.conversations.countDocuments({ userId });
  }

  /** True when a conversation was deleted. */
  async remove(userId: number, id: number): Promise<boolean> {
    const result = await this.conversations.deleteOne({ userId, id });
    return result.deletedCount === 1;
  }

  async upsert(conversation: Required<ConversationRecord>): Promise<void> {
    const { userId, id, ...fields } = conversation;
    await this.conversations.updateOne({ userId, id }, { $set: fields }, { upsert: true });
  }
}
