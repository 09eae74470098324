import DataLoader from 'dataloader';

import { MAX_CONVERSATION_NAME_LENGTH, MAX_PAGE_SIZE } from '../limits.js';
import { type Outcome, userErrors } from '../shared/user-error.js';
import type { ConversationRecord, MessageRecord } from './conversation.model.js';
import type { ConversationStore } from './conversation.store.js';

export interface ConversationPage {
  nodes: ConversationRecord[];
  hasNextPage: boolean;
}

export type RenameOutcome = Outcome<{ conversation: ConversationRecord }>;

/**
 * One caller's view of their conversations, built per request. Every read is
 * scoped to the caller, so someone else's conversation looks exactly like a
 * missing one. The loaders batch all lookups of one request into one query.
 */
export class ConversationService {
  private readonly byId: DataLoader<number, ConversationRecord | null>;
  private readonly messagesById: DataLoader<number, MessageRecord[]>;

  constructor(
    private readonly store: ConversationStore,
    private readonly userId: number,
  ) {
    this.byId = new DataLoader(async (ids) => {
      const found = indexById(await store.findMany(userId, ids));
      return ids.map((id) => found.get(id) ?? null);
    });
    this.messagesById = new DataLoader(async (ids) => {
      const found = indexById(await store.messagesOf(userId, ids));
      return ids.map((id) => found.get(id)?.messages ?? []);
    });
  }

  /** Newest first; `limit` is capped at MAX_PAGE_SIZE. */
  async page(limit: number, beforeId?: number): Promise<ConversationPage> {
    const size = Math.min(limit, MAX_PAGE_SIZE);
    const rows = await this.store.page(this.userId, size + 1, beforeId);
    return { nodes: rows.slice(0, size), hasNextPage: rows.length > size };
  }

  get(id: number): Promise<ConversationRecord | null> {
    return this.byId.load(id);
  }

  /** Uses the bodies already loaded with the conversation, else one batched read for the whole request. */
  messagesOf(conversation: ConversationRecord): Promise<MessageRecord[]> | MessageRecord[] {
    return conversation.messages ?? this.messagesById.load(conversation.id);
  }

  count(): Promise<number> {
    return this.store.count(this.userId);
  }

  async delete(id: number): Promise<Outcome> {
    if (!(await this.store.remove(this.userId, id))) return { ok: false, error: userErrors.conversationNotFound };
    this.byId.clear(id);
    this.messagesById.clear(id);
    return { ok: true };
  }

  /** The name is stored exactly as given, once it passes `isValidName`. */
  async rename(id: number, name: string): Promise<RenameOutcome> {
    if (!isValidName(name)) return { ok: false, error: userErrors.invalidName };
    const conversation = await this.store.rename(this.userId, id, name);
    if (conversation === null) return { ok: false, error: userErrors.conversationNotFound };
    this.byId.clear(id);
    return { ok: true, conversation };
  }

  /** Ids live on in the owner's sequence (on the user), so none is handed out again. */
  async deleteAll(): Promise<{ ok: true; deletedCount: number }> {
    const deletedCount = await this.store.removeAll(this.userId);
    this.byId.clearAll();
    this.messagesById.clearAll();
    return { ok: true, deletedCount };
  }
}

/**
 * A name has 1 to MAX_CONVERSATION_NAME_LENGTH characters (code points, as a person counts
 * them), not all white space, and is well-formed Unicode (the database stores UTF-8, which
 * could not keep a lone surrogate as given).
 */
function isValidName(name: string): boolean {
  return name.trim() !== '' && !LONE_SURROGATE.test(name) && [...name].length <= MAX_CONVERSATION_NAME_LENGTH;
}

/** In a `u` regular expression a surrogate pair is one code point, so only a lone surrogate is in category Cs. */
const LONE_SURROGATE = /\p{Cs}/u;

function indexById<T extends { id: number }>(rows: T[]): Map<number, T> {
  return new Map(rows.map((row) => [row.id, row]));
}
