import { z } from 'zod';

import { accountRules } from '../accounts/index.js';
import { exactMicros, MAX_BALANCE_POINTS, MICROS_PER_POINT, roundedMicros } from '../accounts/points.js';
import { hashApiKey } from '../auth/api-key.js';
import { type Gift, GIFTS } from '../billing/gift.js';
import type { ConversationRecord } from '../conversations/conversation.model.js';
import { MAX_DOCUMENT_BYTES, storedBytes } from '../conversations/conversation.store.js';
import { conversationRules } from '../conversations/index.js';
import { InvalidInput } from '../invalid-input.js';
import { MAX_CREDENTIAL_LENGTH, MAX_MODEL_NAME_LENGTH, MAX_STORED_CONVERSATION_NAME_LENGTH, MAX_USERNAME_LENGTH } from '../limits.js';
import { describeIssue } from '../shared/field-rules.js';
import { isRecord } from '../shared/is-record.js';
import type { LegacySource, Row } from './legacy-source.js';

/**
 * What this service knows of Chat Nio's tables (`connection/database.go` in coaidev/coai): the
 * columns it reads, and how each row becomes a record here or a reason it cannot.
 */

export const LEGACY_TABLES = ['auth', 'quota', 'apikey', 'package', 'conversation'] as const;
export type LegacyTable = (typeof LEGACY_TABLES)[number];

/** A table as the import reads it. */
export interface TableShape {
  /** The columns read; the others (passwords, emails, `used`, …) stay behind. */
  columns: readonly string[];
  /** The columns a row's checks look at. */
  checked: readonly string[];
  /** The columns of text (the others hold numbers): a row with a text cell over its limit has none of its text read. */
  text: readonly string[];
  /** What names one record here: rows with the same key are copies when they agree on `content`, and differ otherwise. */
  key: readonly string[];
  content: readonly string[];
  /** The order rows are read in: primary-key order, and `quota` by user, beside `auth` (see `rowsByUser`). */
  order: readonly string[];
}

export const TABLE_SHAPES: Record<LegacyTable, TableShape> = {
  auth: { columns: ['id', 'username'], checked: ['id', 'username'], text: ['username'], key: ['id'], content: ['username'], order: ['id'] },
  quota: {
    columns: ['id', 'user_id', 'quota'],
    checked: ['quota'],
    text: [],
    key: ['user_id'],
    content: ['quota'],
    order: ['user_id', 'id'],
  },
  apikey: {
    columns: ['id', 'user_id', 'api_key'],
    checked: ['user_id', 'api_key'],
    text: ['api_key'],
    key: ['api_key'],
    content: ['user_id'],
    order: ['id'],
  },
  package: {
    columns: ['id', 'user_id', 'type'],
    checked: ['user_id', 'type'],
    text: ['type'],
    key: ['user_id', 'type'],
    content: [],
    order: ['id'],
  },
  conversation: {
    columns: ['id', 'user_id', 'conversation_id', 'conversation_name', 'data', 'model'],
    checked: ['user_id', 'conversation_id', 'conversation_name', 'data', 'model'],
    text: ['conversation_name', 'data', 'model'],
    key: ['user_id', 'conversation_id'],
    content: ['conversation_name', 'data', 'model'],
    order: ['id'],
  },
};

/** The most bytes read of each column: a larger cell is left out by its size, never read. */
export type ColumnLimits = Readonly<Record<string, number>>;

/** Far more than the text of any number SQLite or MySQL stores (a `DECIMAL(24,6)` takes 26). */
const NUMBER_BYTES = 64;
/** A character takes at most four bytes of UTF-8. */
const UTF8_BYTES_PER_CHARACTER = 4;
/** Chat Nio's `VARCHAR(255)`: the gift names here are far shorter. */
const GIFT_TYPE_BYTES = 255;

/**
 * What each column may hold at most: the bytes the longest value its rule accepts can take, and
 * for `data` (a conversation's messages, whose document is checked once read) `maxDataBytes`.
 */
export function columnLimits(maxDataBytes: number): ColumnLimits {
  return {
    id: NUMBER_BYTES,
    user_id: NUMBER_BYTES,
    conversation_id: NUMBER_BYTES,
    quota: NUMBER_BYTES,
    username: UTF8_BYTES_PER_CHARACTER * MAX_USERNAME_LENGTH,
    api_key: MAX_CREDENTIAL_LENGTH,
    type: GIFT_TYPE_BYTES,
    conversation_name: UTF8_BYTES_PER_CHARACTER * MAX_STORED_CONVERSATION_NAME_LENGTH,
    model: UTF8_BYTES_PER_CHARACTER * MAX_MODEL_NAME_LENGTH,
    data: maxDataBytes,
  };
}

/** The queries of an import. The same SQL runs on MySQL, MariaDB and SQLite but for how a cell is sized and read. */
export interface LegacyQueries {
  /** Every row of the table, in `order`. */
  rows(table: LegacyTable): string;
  /** The rows whose key other rows have too, for telling copies from rows that differ. */
  repeated(table: LegacyTable): string;
}

/**
 * Each column comes with its size as `COLUMN_bytes`, asked of the database first. A number over
 * its limit is not read; in a row with a text cell over its limit, no text is read (a cell stored
 * after a large one could only be reached through it) and the numbers name the row.
 */
export function legacyQueries(source: LegacySource, limits: ColumnLimits): LegacyQueries {
  const over = (column: string) => `${source.sizeOf(column)} > ${limits[column]!}`;
  const read = (table: LegacyTable) => {
    const { columns, text } = TABLE_SHAPES[table];
    return columns
      .map((column) => {
        const unread = text.includes(column) ? text.map(over).join(' OR ') : over(column);
        return `CASE WHEN ${unread} THEN NULL ELSE ${source.valueOf(column)} END AS ${column}, ${source.sizeOf(column)} AS ${column}_bytes`;
      })
      .join(', ');
  };
  return {
    // Named with their table: a bare name would be the read value's alias, and the database would sort by it.
    rows: (table) =>
      `SELECT ${read(table)} FROM ${table} ORDER BY ${TABLE_SHAPES[table].order.map((column) => `${table}.${column}`).join(', ')}`,
    repeated(table) {
      const key = TABLE_SHAPES[table].key.join(', ');
      const named = TABLE_SHAPES[table].key.map((column) => `${table}.${column}`).join(', ');
      const tuple = TABLE_SHAPES[table].key.length === 1 ? named : `(${named})`;
      return `SELECT ${read(table)} FROM ${table} WHERE ${tuple} IN (SELECT ${key} FROM ${table} GROUP BY ${key} HAVING COUNT(*) > 1)`;
    },
  };
}

/**
 * Checks that each table has the columns read, and counts its rows (for progress). A database
 * without them is not Chat Nio's: the error says which table or column is missing.
 */
export async function countLegacyRows(source: LegacySource): Promise<Record<LegacyTable, number>> {
  const counts = {} as Record<LegacyTable, number>;
  for (const table of LEGACY_TABLES) {
    try {
      for await (const _row of source.rows(`SELECT ${TABLE_SHAPES[table].columns.join(', ')} FROM ${table} LIMIT 0`));
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

/** Text as stored, strictly: bytes that are not UTF-8 are refused, never replaced, and a byte order mark is kept. */
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * The cells of `columns` as the checks take them: text (read as bytes) decoded, numbers and NULL
 * as they are; or why they cannot be taken. Nothing is ever altered: text that is not UTF-8 or
 * holds a NUL is refused, and a cell over its limit was never read (`legacyQueries`).
 */
export function cellsOf(row: Row, columns: readonly string[], limits: ColumnLimits): Checked<Row> {
  const problems: string[] = [];
  for (const column of columns) {
    const size = row[`${column}_bytes`];
    if (typeof size === 'number' && size > limits[column]!) {
      problems.push(`${column}: ${size} bytes, over the limit of ${limits[column]} bytes: not read`);
    }
  }
  if (problems.length > 0) return { ok: false, reason: problems.join('; ') };
  const cells: Row = {};
  for (const column of columns) {
    const value = row[column];
    const text = value instanceof Uint8Array ? decoded(value) : value;
    if (text === undefined) problems.push(`${column}: is not valid UTF-8`);
    else if (typeof text === 'string' && text.includes('\0')) problems.push(`${column}: holds a NUL character`);
    else cells[column] = text;
  }
  return problems.length === 0 ? { ok: true, value: cells } : { ok: false, reason: problems.join('; ') };
}

function decoded(bytes: Uint8Array): string | undefined {
  try {
    return UTF8.decode(bytes);
  } catch {
    return undefined;
  }
}

/** `column=value`, how a problem names its row: text in quotes, bytes that are not UTF-8 in hexadecimal, a cell not read by its size. */
export function keyOf(row: Row, ...columns: string[]): string {
  return columns.map((column) => `${column}=${shownCell(row, column)}`).join(' ');
}

/** A cell as a problem shows it (see `keyOf`). */
export function shownCell(row: Row, column: string): string {
  const value = row[column];
  const size = row[`${column}_bytes`];
  if (value === null && typeof size === 'number') return `(${size} bytes, not read)`;
  if (!(value instanceof Uint8Array)) return shown(value);
  const text = decoded(value);
  if (text !== undefined) return shown(text);
  const hex = Buffer.from(value.subarray(0, 28)).toString('hex');
  return `x'${hex}${value.length > 28 ? '…' : ''}'`;
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

const userFields = z.object({ id: accountRules.userId, username: accountRules.username });

/** An `auth` row (id and username) with its balance. */
export function userOf(row: Row, balance: LegacyBalance): Checked<LegacyUser> {
  const parsed = userFields.safeParse({ id: numeric(row.id), username: row.username ?? undefined });
  if (!parsed.success) return { ok: false, reason: reasonOf(parsed.error) };
  return { ok: true, value: { ...parsed.data, balanceMicros: balance.micros } };
}

const apiKeyFields = z.object({ user_id: accountRules.userId, api_key: accountRules.apiKey });

/** An `apikey` row: the key is kept only as its hash, as every key here. */
export function apiKeyOf(row: Row): Checked<{ userId: number; hash: string }> {
  const parsed = apiKeyFields.safeParse({ user_id: numeric(row.user_id), api_key: row.api_key ?? undefined });
  if (!parsed.success) return { ok: false, reason: reasonOf(parsed.error) };
  return { ok: true, value: { userId: parsed.data.user_id, hash: hashApiKey(parsed.data.api_key) } };
}

const giftFields = z.object({
  user_id: accountRules.userId,
  type: z.enum(GIFTS, { error: (issue) => `${shown(issue.input)} is not a gift package here (${GIFTS.join(', ')})` }),
});

/** A `package` row: a gift package the user was granted. */
export function giftOf(row: Row): Checked<{ userId: number; gift: Gift }> {
  const parsed = giftFields.safeParse({ user_id: numeric(row.user_id), type: row.type });
  if (!parsed.success) return { ok: false, reason: reasonOf(parsed.error) };
  return { ok: true, value: { userId: parsed.data.user_id, gift: parsed.data.type } };
}

/** A conversation's field names (`conversationRules.record`) as Chat Nio's columns, in reasons. */
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
  const parsed = conversationRules.record.safeParse({
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
