import { createHash } from 'node:crypto';

import type { Row } from './legacy-source.js';

/**
 * Rows that belong together: a user's rows in `auth` and `quota`, read side by side, and rows of
 * a table that share a key (tables without keys can hold the same row twice, or two rows that
 * differ under one key).
 */

/** One user id's rows in `auth` and `quota`. A row whose id is not a number (NULL, text) is alone in its group. */
export interface UserRows {
  auth: Row[];
  quota: Row[];
}

/**
 * Joins `auth` (in `id` order) and `quota` (in `user_id` order) as both are read, one user at a
 * time: every row of each table comes in exactly one group, so each is counted once, however
 * often an id repeats in either table.
 */
export async function* rowsByUser(authRows: AsyncIterable<Row>, quotaRows: AsyncIterable<Row>): AsyncGenerator<UserRows> {
  const auth = new Lookahead(authRows, 'id');
  const quota = new Lookahead(quotaRows, 'user_id');
  try {
    for (;;) {
      const [authKey, quotaKey] = [await auth.nextKey(), await quota.nextKey()];
      if (authKey === 'end' && quotaKey === 'end') return;
      // SQL sorts NULL first and text after numbers; such rows match nothing, so each goes alone.
      if (authKey === 'none') yield { auth: [await auth.take()], quota: [] };
      else if (quotaKey === 'none') yield { auth: [], quota: [await quota.take()] };
      else {
        const key = authKey === 'end' ? quotaKey : quotaKey === 'end' || authKey <= quotaKey ? authKey : quotaKey;
        yield { auth: await auth.takeAll(key as UserKey), quota: await quota.takeAll(key as UserKey) };
      }
    }
  } finally {
    await Promise.all([auth.close(), quota.close()]);
  }
}

type UserKey = number | bigint;

/** A row stream and its next row, keyed by the user id in `column`. */
class Lookahead {
  private readonly rows: AsyncIterator<Row>;
  private next: IteratorResult<Row> | undefined;

  constructor(
    rows: AsyncIterable<Row>,
    private readonly column: string,
  ) {
    this.rows = rows[Symbol.asyncIterator]();
  }

  /** The next row's user id; 'none' when it has none that could match, 'end' after the last row. */
  async nextKey(): Promise<UserKey | 'none' | 'end'> {
    this.next ??= await this.rows.next();
    if (this.next.done === true) return 'end';
    return userKey(this.next.value[this.column]) ?? 'none';
  }

  async take(): Promise<Row> {
    await this.nextKey();
    const row = this.next!.value as Row;
    this.next = undefined;
    return row;
  }

  /** Every row from here whose user id is `key`. */
  async takeAll(key: UserKey): Promise<Row[]> {
    const rows: Row[] = [];
    for (let next = await this.nextKey(); next !== 'end' && next !== 'none' && sameNumber(next, key); next = await this.nextKey()) {
      rows.push(await this.take());
    }
    return rows;
  }

  async close(): Promise<void> {
    await this.rows.return?.();
  }
}

function userKey(value: unknown): UserKey | undefined {
  if (typeof value === 'bigint') return value;
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/** Numbers and big integers compare exactly with `<`, whatever their types. */
function sameNumber(a: UserKey, b: UserKey): boolean {
  return !(a < b) && !(b < a);
}

/**
 * The cells of `columns` as one string, equal for rows that hold the same: bytes by their
 * SHA-256, a cell left unread by its size.
 */
export function fingerprint(row: Row, columns: readonly string[]): string {
  return JSON.stringify(
    columns.map((column) => {
      const value = row[column];
      if (value instanceof Uint8Array) return `bytes:${createHash('sha256').update(value).digest('base64')}`;
      if (value === null || value === undefined) return `null:${String(row[`${column}_bytes`] ?? '')}`;
      return `${typeof value === 'bigint' ? 'number' : typeof value}:${String(value)}`;
    }),
  );
}

/** Whether every row holds the same in `columns` (none or one row always does). */
export function allSame(rows: readonly Row[], columns: readonly string[]): boolean {
  return new Set(rows.map((row) => fingerprint(row, columns))).size <= 1;
}

/** A key that more than one row has, and what became of the first of them. */
export interface RepeatedKey {
  rows: number;
  /** Some of the rows differ (beyond their own id in Chat Nio): none comes across. */
  differ: boolean;
  /** The first row was passed on to be written; the others are its copies and share its outcome. */
  passedOn: boolean;
  outcome?: 'written' | 'there' | { conflict: string };
}

/**
 * The keys more than one of `rows` has (by `fingerprint`: the database may group keys its
 * collation calls equal, such as `A` and `a`), each with whether those rows differ in `content`.
 */
export async function repeatedKeys(
  rows: AsyncIterable<Row>,
  key: readonly string[],
  content: readonly string[],
): Promise<Map<string, RepeatedKey>> {
  const seen = new Map<string, { rows: number; content: string; differ: boolean }>();
  for await (const row of rows) {
    const name = fingerprint(row, key);
    const held = fingerprint(row, content);
    const group = seen.get(name);
    if (group === undefined) seen.set(name, { rows: 1, content: held, differ: false });
    else {
      group.rows += 1;
      group.differ ||= group.content !== held;
    }
  }
  const repeated = new Map<string, RepeatedKey>();
  for (const [name, group] of seen) if (group.rows > 1) repeated.set(name, { rows: group.rows, differ: group.differ, passedOn: false });
  return repeated;
}
