import DataLoader from 'dataloader';

import { MAX_PAGE_SIZE } from '../limits.js';
import { type Outcome, userErrors } from '../shared/user-error.js';
import { writtenBytes } from '../shared/written-bytes.js';
import type { ConversationRecord, MessageRecord } from './conversation.model.js';
import type { ConversationStore, NumberRange, ReadAllowance } from './conversation.store.js';
import { newConversationNameProblem } from './conversation-name.js';

/** Which page of the caller's conversations (newest first) a connection's arguments ask for. */
export interface PageRequest {
  /** The first `first` conversations of the range; 100 when neither count is given. Capped at MAX_PAGE_SIZE. */
  first?: number;
  /** The last `last` conversations of the range, or of its first `first` when both are given. Capped at MAX_PAGE_SIZE. */
  last?: number;
  /** The range holds only conversations numbered below this (older than the `after` cursor's). */
  after?: number;
  /** The range holds only conversations numbered above this (newer than the `before` cursor's), when it lies inside `after`'s. */
  before?: number;
}

/**
 * A page of conversations, newest first. A flag that compares the range with a count comes with
 * the page (one row more was read); one that looks past a cursor is read only when asked for, once.
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
 * What the answer may still carry, as the service sees it: the stored text it hands to the
 * answer is charged (which throws once the answer is over its limit), and the reads behind it
 * are admitted as they arrive (`ReadAllowance`). The request's response budget
 * (`operations/response-budget.ts`) is one.
 */
export interface AnswerCharge extends ReadAllowance {
  /** Counts `bytes` more of stored text in the answer; throws once the answer is over its limit. */
  charge(bytes: number): void;
}

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
    private readonly budget: AnswerCharge,
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
   * A page as the Relay Cursor Connections specification defines it (EdgesToReturn): the range
   * between the cursors, then its first `first`, then the last `last` of those. A flag on a side
   * whose count is given says whether the range holds more than that count; otherwise it says
   * whether any conversation lies past the cursor on that side (the one it names counts, while
   * it exists), which the specification lets a server answer when it can do so cheaply.
   */
  async page({ first, last, after, before }: PageRequest): Promise<ConversationPage> {
    const range = rangeBetween(after, before);
    if (first === undefined && last !== undefined) {
      // Only the end of the range: read from the oldest, one row more than `last`.
      const size = atMostAPage(last);
      const rows = await this.store.page(this.userId, size + 1, range, 'oldest', this.budget);
      const nodes = this.answeredPage(rows.slice(0, size).reverse());
      return { nodes, hasNextPage: this.past(before, 'atMost'), hasPreviousPage: () => rows.length > size };
    }
    // From the newest, one row more than either count: enough for the first `first`, then their
    // last `last`, and to tell whether the range holds more than each count.
    const head = atMostAPage(first ?? MAX_PAGE_SIZE);
    const tail = last === undefined ? undefined : atMostAPage(last);
    const rows = await this.store.page(this.userId, Math.max(head, tail ?? 0) + 1, range, 'newest', this.budget);
    const firsts = rows.slice(0, head);
    return {
      nodes: this.answeredPage(tail === undefined ? firsts : firsts.slice(Math.max(0, firsts.length - tail))),
      hasNextPage: () => rows.length > head,
      hasPreviousPage: tail === undefined ? this.past(after, 'atLeast') : () => rows.length > tail,
    };
  }

  /** Whether the caller has a conversation at or past `cursor` on one side; read when first asked, once. */
  private past(cursor: number | undefined, side: 'atLeast' | 'atMost'): () => boolean | Promise<boolean> {
    return cursor === undefined ? () => false : once(() => this.store.any(this.userId, { [side]: cursor }, this.budget));
  }

  /** A page's rows going into the answer: their names and models charged. */
  private answeredPage(nodes: ConversationRecord[]): ConversationRecord[] {
    let bytes = 0;
    for (const node of nodes) bytes += summaryBytes(node);
    this.budget.charge(bytes);
    return nodes;
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

  /** The name is stored exactly as given, once it passes `newConversationNameProblem`; `number` as in `delete`. */
  async rename(number: number | null, name: string): Promise<RenameOutcome> {
    if (newConversationNameProblem(name) !== null) return { ok: false, error: userErrors.invalidName };
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

const atMostAPage = (count: number): number => Math.min(count, MAX_PAGE_SIZE);

/**
 * The conversations between the cursors, as ApplyCursorsToEdges finds them: those older than
 * `after`, then of those the ones newer than `before`. A `before` at or past `after` names no
 * edge that `after` left, and the specification then leaves the range as it is.
 */
function rangeBetween(after: number | undefined, before: number | undefined): NumberRange {
  const beforeInside = before !== undefined && (after === undefined || before < after);
  return { below: after, above: beforeInside ? before : undefined };
}

/**
 * The bytes an answer writes for a stored string, JSON's escapes included; another writer's value of
 * another type counts as none (the answer shows it short, or as an error).
 */
function textBytes(value: unknown): number {
  return typeof value === 'string' ? writtenBytes(value) : 0;
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
