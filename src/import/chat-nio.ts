import { z } from 'zod';

import { exactMicros, MAX_BALANCE_POINTS, MICROS_PER_POINT, roundedMicros } from '../accounts/points.js';
import { hashApiKey } from '../auth/api-key.js';
import { type Gift, GIFTS } from '../billing/gift.js';
import type { ConversationRecord } from '../conversations/conversation.model.js';
import { MAX_DOCUMENT_BYTES, storedBytes } from '../conversations/conversation.store.js';
import { InvalidInput } from '../invalid-input.js';
import { describeIssue, seedRules } from '../seed/seed-file.js';
import { isRecord } from '../shared/is-record.js';
import type { LegacySource, Row } from './legacy-source.js';

/**
 * What this service knows of Chat Nio's tables (`connection/database.go` in coaidev/coai): the
 * columns it reads, and how each row becomes a record here or a reason it cannot.
 */

export const LEGACY_TABLES = ['auth', 'quota', 'apikey', 'package', 'conversation'] as const;
export type LegacyTable = (typeof LEGACY_TABLES)[number];

/** The columns read from each table; the others (passwords, emails, `used`, …) stay behind. */
const COLUMNS: Record<LegacyTable, string[]> = {
  auth: ['id', 'username'],
  quota: ['id', 'user_id', 'quota'],
  apikey: ['id', 'user_id', 'api_key'],
  package: ['id', 'user_id', 'type'],
  conversation: ['id', 'user_id', 'conversation_id', 'conversation_name', 'data', 'model'],
};

/** Each read, in primary key order. The same SQL runs on MySQL, MariaDB and SQLite. */
export const LEGACY_QUERIES = {
  /** Every user with its quota row, when it has one (Chat Nio reads a missing one as 0). */
  users:
    'SELECT auth.id AS id, auth.username AS username, quota.id AS quota_id, quota.quota AS quota ' +
    'FROM auth LEFT JOIN quota ON quota.user_id = auth.id ORDER BY auth.id',
  /** Quota rows of no user (SQLite does not enforce Chat Nio's foreign keys). */
  orphanQuotas:
    'SELECT quota.id AS id, quota.user_id AS user_id, quota.quota AS quota ' +
    'FROM quota LEFT JOIN auth ON auth.id = quota.user_id WHERE auth.id IS NULL ORDER BY quota.id',
  apiKeys: 'SELECT id, user_id, api_key FROM apikey ORDER BY id',
  gifts: 'SELECT id, user_id, type FROM package ORDER BY id',
  conversations: 'SELECT id, user_id, conversation_id, conversation_name, data, model FROM conversation ORDER BY id',
} as const;

/**
 * Checks that each table has the columns read, and counts its rows (for progress). A database
 * without them is not Chat Nio's: the error says which table or column is missing.
 */
export async function countLegacyRows(source: LegacySource): Promise<Record<LegacyTable, number>> {
  const counts = {} as Record<LegacyTable, number>;
  for (const table of LEGACY_TABLES) {
    try {
      for await (const _row of source.rows(`SELECT ${COLUMNS[table].join(', ')} FROM ${table} LIMIT 0`));
    } catch (error) {
      const message = (error as Error).message;
      if (!NOT_CHAT_NIO.test(message)) throw error;
      throw new InvalidInput([`${source.description} is not a Chat Nio database: ${message}`]);
    }
    for await (const row of source.rows(`SELECT COUNT(*) AS count FROM ${table}`)) counts[table] = Number(row.count);
  }
  return counts;
}

/** A missing table or column (MySQL and MariaDB, then SQLite), or a file that is no SQLite database. */
const NOT_CHAT_NIO = /doesn't exist|Unknown column|no such table|no such column|not a database/i;

/** A row that came through its checks, or why it cannot come across. */
export type Checked<T> = { ok: true; value: T } | { ok: false; reason: string };

export interface LegacyBalance {
  micros: number;
  /** A binary floating point balance (SQLite's REAL) had more than six decimals and was rounded. */
  rounded: boolean;
}

export interface LegacyUser {
  id: number;
  username: string;
  balanceMicros: number;
}

/** `column=value`, how a problem names its row. */
export function keyOf(row: Row, ...columns: string[]): string {
  return columns.map((column) => `${column}=${shown(row[column])}`).join(' ');
}

/** A user id as the rows give it: a number when it is one, for comparing with the users read. */
export function userIdOf(value: unknown): number | undefined {
  return typeof value === 'number' ? value : typeof value === 'bigint' ? Number(value) : undefined;
}

/**
 * A `quota` column as micro-points. MySQL and MariaDB give `DECIMAL(24,6)` as its exact text;
 * SQLite gives the `REAL` it stored, whose shortest decimal text is rounded to six decimals.
 * `NULL` (and no quota row) is 0, as Chat Nio reads it.
 */
export function balanceOf(value: unknown): Checked<LegacyBalance> {
  if (value === null || value === undefined) return { ok: true, value: { micros: 0, rounded: false } };
  const amount = typeof value === 'bigint' ? value.toString() : value;
  if ((typeof amount !== 'number' && typeof amount !== 'string') || roundedMicros(amount) === null) {
    return { ok: false, reason: `quota ${shown(value)} is not a number this service can hold` };
  }
  const micros = roundedMicros(amount)!;
  if (Math.abs(micros) > MAX_BALANCE_POINTS * MICROS_PER_POINT) {
    return { ok: false, reason: `quota ${shown(value)} is beyond ±${MAX_BALANCE_POINTS} points` };
  }
  return { ok: true, value: { micros, rounded: exactMicros(amount) === null } };
}

const userFields = z.object({ id: seedRules.id, username: seedRules.username });

/** An `auth` row (id and username) with its balance. */
export function userOf(row: Row, balance: LegacyBalance): Checked<LegacyUser> {
  const parsed = userFields.safeParse({ id: numeric(row.id), username: row.username ?? undefined });
  if (!parsed.success) return { ok: false, reason: reasonOf(parsed.error) };
  return { ok: true, value: { ...parsed.data, balanceMicros: balance.micros } };
}

const apiKeyFields = z.object({ user_id: seedRules.id, api_key: seedRules.apiKey });

/** An `apikey` row: the key is kept only as its hash, as every key here. */
export function apiKeyOf(row: Row): Checked<{ userId: number; hash: string }> {
  const parsed = apiKeyFields.safeParse({ user_id: numeric(row.user_id), api_key: row.api_key ?? undefined });
  if (!parsed.success) return { ok: false, reason: reasonOf(parsed.error) };
  return { ok: true, value: { userId: parsed.data.user_id, hash: hashApiKey(parsed.data.api_key) } };
}

const giftFields = z.object({
  user_id: seedRules.id,
  type: z.enum(GIFTS, { error: (issue) => `${shown(issue.input)} is not a gift package here (${GIFTS.join(', ')})` }),
});

/** A `package` row: a gift package the user was granted. */
export function giftOf(row: Row): Checked<{ userId: number; gift: Gift }> {
  const parsed = giftFields.safeParse({ user_id: numeric(row.user_id), type: row.type });
  if (!parsed.success) return { ok: false, reason: reasonOf(parsed.error) };
  return { ok: true, value: { userId: parsed.data.user_id, gift: parsed.data.type } };
}

/** The seed format's field names as Chat Nio's columns, in reasons. */
const CONVERSATION_COLUMNS: Record<string, string> = {
  userId: 'user_id',
  id: 'conversation_id',
  name: 'conversation_name',
  messages: 'data',
};

/**
 * A `conversation` row. `data` is the JSON array of messages Chat Nio saves (`null` for a
 * conversation without any); of each message only `role` and `content` are kept. Chat Nio keeps
 * no web search flag: it is false.
 */
export function conversationOf(row: Row): Checked<Required<ConversationRecord>> {
  const messages = messagesOf(row.data);
  if (!messages.ok) return messages;
  const parsed = seedRules.conversation.safeParse({
    userId: numeric(row.user_id),
    id: numeric(row.conversation_id),
    name: row.conversation_name ?? undefined,
    model: row.model ?? undefined,
    enableWeb: false,
    messages: messages.value,
  });
  if (!parsed.success) return { ok: false, reason: reasonOf(parsed.error, CONVERSATION_COLUMNS) };
  const conversation = parsed.data;
  const bytes = storedBytes(conversation);
  if (bytes > MAX_DOCUMENT_BYTES) {
    return { ok: false, reason: `${megabytes(bytes)} as a document, over MongoDB's limit of ${megabytes(MAX_DOCUMENT_BYTES)}` };
  }
  return { ok: true, value: conversation };
}

function messagesOf(data: unknown): Checked<unknown[]> {
  if (data === null || data === undefined) return { ok: true, value: [] };
  if (typeof data !== 'string') return { ok: false, reason: 'data is not text' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch (error) {
    return { ok: false, reason: `data is not JSON (${(error as Error).message})` };
  }
  if (parsed === null) return { ok: true, value: [] };
  if (!Array.isArray(parsed)) return { ok: false, reason: `data is not a JSON array of messages but ${kindOf(parsed)}` };
  return { ok: true, value: parsed.map((message) => (isRecord(message) ? { role: message.role, content: message.content } : message)) };
}

/** SQLite gives integers beyond 2^53 as BigInt; as a number they still fail the range check they must fail. */
function numeric(value: unknown): unknown {
  return typeof value === 'bigint' ? Number(value) : (value ?? undefined);
}

/** Every problem of a row, each as `column: message` (`data[2].role: is required`). */
function reasonOf(error: z.ZodError, columns: Record<string, string> = {}): string {
  return error.issues.map((issue) => describeIssue('')(issue).replace(/^[A-Za-z_]+/, (field) => columns[field] ?? field)).join('; ');
}

function kindOf(value: unknown): string {
  return isRecord(value) ? 'an object' : `a ${typeof value}`;
}

function shown(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  const text = typeof value === 'string' ? JSON.stringify(value) : String(value);
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}

function megabytes(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
