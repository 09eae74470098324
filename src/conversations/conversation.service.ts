import DataLoader from 'dataloader';

import { MAX_CONVERSATION_NAME_LENGTH, MAX_PAGE_SIZE } from '../limits.js';
import type { ResponseBudget } from '../operations/response-budget.js';
import { type Outcome, userErrors } from '../shared/user-error.js';
import type { ConversationRecord, MessageRecord } from './conversation.model.js';
import type { ConversationStore } from './conversation.store.js';

/** Which page of the caller's conversations (newest first) a connection's arguments ask for. */
export interface PageRequest {
  /** Forward: the first `size` conversations of the range; backward: the last `size`. Capped at MAX_PAGE_SIZE. */
  direction: 'forward' | 'backward';
  size: number;
  /** The range holds only conversations numbered below this (older than the `after` cursor's). */
  after?: number;
  /** The range holds only conversations numbered above this (newer than the `before` cursor's). */
  before?: number;
}

/**
 * A page of conversations, newest first. The flag on the side the page was read towards comes
 * with the page (one row more was read); the other side's is read only when asked for, once.
 */
export interface ConversationPage {
  nodes: ConversationRecord[];
  hasNextPage(): boolean | Promise<boolean>;
  hasPreviousPage(): boolean | Promise<boolean>;
}

/** One conversation named by its owner and number, as a global id names it. */
export interface ConversationKey {
  userId: number;
  number: number;
}

export type DeleteOutcome = Outcome<{ deleted: ConversationKey }>;
export type RenameOutcome = Outcome<{ conversation: ConversationRecord }>;

/**
 * One caller's view of their conversations, built per request. Every read is
 * scoped to the caller, so someone else's conversation looks exactly like a
 * missing one. The loaders batch all lookups of one request into one query.
 *
 * What it hands to the answer is charged to the request's budget each time: the names and
 * models of a page or of a conversation looked up, a conversation's messages (whole, roles and
 * contents) each time they are resolved. Its reads stop once they hold more than the budget has left.
 */
export class ConversationService {
  private readonly byId: DataLoader<number, ConversationRecord | null>;
  private readonly messagesById: DataLoader<number, MessageRecord[]>;

  constructor(
    private readonly store: ConversationStore,
    private readonly userId: number,
    private readonly budget: ResponseBudget,
  ) {
    this.byId = new DataLoader(async (ids) => {
      const found = indexById(await store.findMany(userId, ids, budget));
      return ids.map((id) => found.get(id) ?? null);
    });
    this.messagesById = new DataLoader(async (ids) => {
      const found = indexById(await store.messagesOf(userId, ids, budget));
      return ids.map((id) => found.get(id)?.messages ?? []);
    });
  }

  /**
   * A page as Relay's cursor connections define it: the range between the cursors, then its
   * first or last `size`. Whether conversations lie beyond the range's other end is whether any
   * is numbered from the cursor on (the row a cursor names counts, when it still exists).
   */
  async page({ direction, size, after, before }: PageRequest): Promise<ConversationPage> {
    const limit = Math.min(size, MAX_PAGE_SIZE);
    const forward = direction === 'forward';
    const rows = await this.store.page(this.userId, limit + 1, { below: after, above: before }, forward ? 'newest' : 'oldest', this.budget);
    const more = rows.length > limit;
    const nodes = forward ? rows.slice(0, limit) : rows.slice(0, limit).reverse();
    let bytes = 0;
    for (const node of nodes) bytes += summaryBytes(node);
    this.budget.charge(bytes);
    const beyond = (cursor: number | undefined, range: 'atLeast' | 'atMost') =>
      cursor === undefined ? () => false : once(() => this.store.any(this.userId, { [range]: cursor }, this.budget));
    return forward
      ? { nodes, hasNextPage: () => more, hasPreviousPage: beyond(after, 'atLeast') }
      : { nodes, hasNextPage: beyond(before, 'atMost'), hasPreviousPage: () => more };
  }

  async get(number: number): Promise<ConversationRecord | null> {
    const conversation = await this.byId.load(number);
    if (conversation !== null) this.budget.charge(summaryBytes(conversation));
    return conversation;
  }

  /** The number of the caller's conversation that `key` names; null when it names someone else's. */
  own(key: ConversationKey | null): number | null {
    return key !== null && key.userId === this.userId ? key.number : null;
  }

  /** The conversation `key` names, when it is the caller's; someone else's is null, like an unknown one. */
  find(key: ConversationKey): Promise<ConversationRecord | null> | null {
    const number = this.own(key);
    return number === null ? null : this.get(number);
  }

  /** Uses the bodies already loaded with the conversation, else one batched read for the whole request. */
  messagesOf(conversation: ConversationRecord): Promise<MessageRecord[]> | MessageRecord[] {
    return conversation.messages === undefined ? this.loadMessages(conversation.id) : this.answered(conversation.messages);
  }

  private async loadMessages(number: number): Promise<MessageRecord[]> {
    return this.answered(await this.messagesById.load(number));
  }

  /** Messages going into the answer, charged each time: aliases that repeat them repeat the bytes. */
  private answered(messages: MessageRecord[]): MessageRecord[] {
    let bytes = 0;
    for (const { role, content } of messages) bytes += textBytes(role) + textBytes(content);
    this.budget.charge(bytes);
    return messages;
  }

  count(): Promise<number> {
    return this.store.count(this.userId);
  }

  /** `number` null: a conversation that is not the caller's (see `own`), answered like an unknown one. */
  async delete(number: number | null): Promise<DeleteOutcome> {
    if (number === null || !(await this.store.remove(this.userId, number))) return { ok: false, error: userErrors.conversationNotFound };
    this.byId.clear(number);
    this.messagesById.clear(number);
    return { ok: true, deleted: { userId: this.userId, number } };
  }

  /** The name is stored exactly as given, once it passes `isValidName`; `number` as in `delete`. */
  async rename(number: number | null, name: string): Promise<RenameOutcome> {
    if (!isValidName(name)) return { ok: false, error: userErrors.invalidName };
    if (number === null) return { ok: false, error: userErrors.conversationNotFound };
    const conversation = await this.store.rename(this.userId, number, name);
    if (conversation === null) return { ok: false, error: userErrors.conversationNotFound };
    this.byId.clear(number);
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

/** The UTF-8 bytes of a stored string; another writer's value of another type counts as none (the answer shows it short, or as an error). */
function textBytes(value: unknown): number {
  return typeof value === 'string' ? Buffer.byteLength(value) : 0;
}

/** The stored text a conversation shows without its messages. */
function summaryBytes({ name, model }: ConversationRecord): number {
  return textBytes(name) + textBytes(model);
}

/** `compute` run on the first call only; later calls share its result. */
function once<T>(compute: () => Promise<T>): () => Promise<T> {
  let result: Promise<T> | undefined;
  return () => (result ??= compute());
}

function indexById<T extends { id: number }>(rows: T[]): Map<number, T> {
  return new Map(rows.map((row) => [row.id, row]));
}
