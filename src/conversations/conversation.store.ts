import { GRAPHQL_MAX_INT, GRAPHQL_MIN_INT } from 'graphql';
import { BSON, type Document, type Filter, type FindCursor, type FindOptions } from 'mongodb';

import type { DatabaseCommands } from '../db/database-commands.js';
import { insertMissing, type InsertMissingResult } from '../db/insert-missing.js';
import type { Logger } from '../logger.js';
import type { ConversationModel, ConversationRecord } from './conversation.model.js';

/** Everything but message bodies: what a page of conversations shows. */
const SUMMARY = { _id: 0, userId: 1, id: 1, name: 1, model: 1, enableWeb: 1 } as const;
const FULL = { ...SUMMARY, messages: 1 } as const;
const MESSAGES_ONLY = { _id: 0, id: 1, messages: 1 } as const;

/** The largest document MongoDB stores (BSON), 16 MiB. */
export const MAX_DOCUMENT_BYTES = 16 * 1024 * 1024;

/** The bytes a conversation takes as a stored document, with its `_id` and timestamps. */
export function storedBytes(conversation: Required<ConversationRecord>): number {
  const now = new Date();
  return BSON.calculateObjectSize({ _id: new BSON.ObjectId(), ...conversation, createdAt: now, updatedAt: now });
}

/**
 * What a read may hold: told the bytes a read holds so far (as stored), it throws once that is
 * too much (the request's response budget), and the read stops there.
 */
export interface ReadAllowance {
  admit(bytes: number): void;
}

/** The only code that touches the conversations collection. Every read is scoped to one owner. */
export class ConversationStore {
  constructor(
    private readonly conversations: ConversationModel,
    private readonly commands: DatabaseCommands,
    private readonly logger: Logger,
  ) {}

  /**
   * One end of a range of an owner's conversations, without message bodies: the `limit` newest
   * (or oldest) of those numbered below `range.below` and above `range.above`. Other writers
   * share the collection: a row the schema cannot show (an id stored as a 64-bit integer, a
   * field missing) is left out and logged rather than failing the whole page, and the rows after
   * it fill its place (one more read, only then).
   */
  async page(
    userId: number,
    limit: number,
    range: NumberRange,
    from: 'newest' | 'oldest',
    allowance: ReadAllowance,
  ): Promise<ConversationRecord[]> {
    const filter = { userId, ...numberFilter(range) };
    const rows: ConversationRecord[] = [];
    // Past left-out rows by position: their ids may not even be numbers to continue from.
    for (let read = 0; ;) {
      const wanted = limit - rows.length;
      const batch = await this.read<Record<string, unknown>>(
        filter,
        { projection: SUMMARY, sort: { id: from === 'newest' ? -1 : 1 }, limit: wanted, ...(read > 0 && { skip: read }) },
        allowance,
      );
      read += batch.length;
      for (const row of batch) {
        const field = fieldThatDoesNotFit(row);
        if (field === undefined) {
          rows.push(row as unknown as ConversationRecord);
        } else {
          // The id as a string: a 64-bit id may not survive as a JSON number.
          const misfit = { userId, conversationId: String(row.id), field };
          this.logger.warn(misfit, 'stored conversation left out of a page: a field does not fit the schema');
        }
      }
      if (rows.length === limit || batch.length < wanted) return rows;
    }
  }

  /** Whether the owner has a conversation numbered within `range` (one indexed read of one key). */
  async any(userId: number, range: NumberRange, allowance: ReadAllowance): Promise<boolean> {
    const found = await this.read({ userId, ...numberFilter(range) }, { projection: { _id: 0, id: 1 }, limit: 1 }, allowance);
    return found.length > 0;
  }

  /** Whole conversations, messages included, in no particular order. */
  findMany(userId: number, ids: readonly number[], allowance: ReadAllowance): Promise<ConversationRecord[]> {
    return this.read({ userId, id: { $in: ids } }, { projection: FULL }, allowance);
  }

  messagesOf(userId: number, ids: readonly number[], allowance: ReadAllowance): Promise<Pick<ConversationRecord, 'id' | 'messages'>[]> {
    return this.read({ userId, id: { $in: ids } }, { projection: MESSAGES_ONLY }, allowance);
  }

  /**
   * The hot reads go to the driver's collection (their filters hold only numbers, so there is
   * nothing for Mongoose to cast) and fetch raw BSON, decoded once here. With command monitoring
   * on (database metrics), the driver would otherwise decode each reply twice: once in full for
   * the monitoring event, once for the cursor. Raw, the event keeps the batch undecoded.
   *
   * Each document is admitted by its stored size as it arrives; a read the allowance stops throws,
   * and its cursor is closed (the rest is never fetched). Documents are decoded once all have
   * arrived, as after `toArray`: decoding each batch as it came held about 100 MB more at the peak
   * of four 31 MiB pages at once (`test/bench/large-answers.ts`).
   */
  private read<T>(filter: Filter<Document>, options: FindOptions, allowance: ReadAllowance): Promise<T[]> {
    return this.commands.time('find', this.readRaw<T>(filter, options, allowance));
  }

  private async readRaw<T>(filter: Filter<Document>, options: FindOptions, allowance: ReadAllowance): Promise<T[]> {
    const cursor = this.conversations.collection.find(filter, { ...options, raw: true }) as unknown as FindCursor<Uint8Array>;
    const documents: Uint8Array[] = [];
    let bytes = 0;
    const take = (document: Uint8Array) => {
      bytes += document.byteLength;
      allowance.admit(bytes);
      documents.push(document);
    };
    // As the driver's `toArray` does: one await per batch from the server, not per document.
    for await (const first of cursor) {
      take(first);
      for (const document of cursor.readBufferedDocuments()) take(document);
    }
    return documents.map((document) => BSON.deserialize(document) as T);
  }

  count(userId: number): Promise<number> {
    return this.commands.time('aggregate', this.conversations.countDocuments({ userId }));
  }

  /** True when a conversation was deleted. */
  async remove(userId: number, id: number): Promise<boolean> {
    const result = await this.commands.time('delete', this.conversations.deleteOne({ userId, id }));
    return result.deletedCount === 1;
  }

  /** How many conversations were deleted. */
  async removeAll(userId: number): Promise<number> {
    const result = await this.commands.time('delete', this.conversations.deleteMany({ userId }));
    return result.deletedCount;
  }

  /** The renamed conversation without message bodies, or null when the owner has none with this id. */
  rename(userId: number, id: number, name: string): Promise<ConversationRecord | null> {
    return this.commands.time(
      'findAndModify',
      this.conversations
        .findOneAndUpdate({ userId, id }, { $set: { name } }, { returnDocument: 'after', projection: SUMMARY })
        .lean<ConversationRecord>(),
    );
  }

  /** Adds the conversations not there yet, by (userId, id); one already there is left as it is, messages included. */
  async insertMissing(conversations: readonly Required<ConversationRecord>[]): Promise<InsertMissingResult> {
    return insertMissing(
      this.commands,
      this.conversations,
      conversations.map((conversation) => ({ key: { userId: conversation.userId, id: conversation.id }, document: conversation })),
    );
  }

  /** Creates or replaces conversations by (userId, id): one command per call. */
  async upsertMany(conversations: readonly Required<ConversationRecord>[]): Promise<void> {
    if (conversations.length === 0) return;
    await this.commands.time(
      'update',
      this.conversations.bulkWrite(
        conversations.map(({ userId, id, ...fields }) => ({
          updateOne: { filter: { userId, id }, update: { $set: fields }, upsert: true },
        })),
        { ordered: false },
      ),
    );
  }
}

/** Bounds on conversation numbers, each left out when absent. */
export interface NumberRange {
  below?: number;
  above?: number;
  atLeast?: number;
  atMost?: number;
}

function numberFilter({ below, above, atLeast, atMost }: NumberRange): { id?: Record<string, number> } {
  const bounds = Object.entries({ $lt: below, $gt: above, $gte: atLeast, $lte: atMost }).filter(([, value]) => value !== undefined);
  return bounds.length === 0 ? {} : { id: Object.fromEntries(bounds) as Record<string, number> };
}

const isInt = (value: unknown): boolean =>
  typeof value === 'number' && Number.isInteger(value) && value >= GRAPHQL_MIN_INT && value <= GRAPHQL_MAX_INT;

/** The first field of a stored summary that its GraphQL type cannot show (`Int` is 32 bits), if any. */
function fieldThatDoesNotFit(row: Record<string, unknown>): string | undefined {
  if (!isInt(row.id)) return 'id';
  if (!isInt(row.userId)) return 'userId';
  if (typeof row.name !== 'string') return 'name';
  if (typeof row.model !== 'string') return 'model';
  if (typeof row.enableWeb !== 'boolean') return 'enableWeb';
  return undefined;
}
