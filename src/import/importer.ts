import { seedRules } from '../seed/seed-file.js';
import {
  apiKeyOf,
  balanceOf,
  type Checked,
  conversationOf,
  giftOf,
  keyOf,
  LEGACY_QUERIES,
  LEGACY_TABLES,
  type LegacyTable,
  type LegacyUser,
  userIdOf,
  userOf,
} from './chat-nio.js';
import type { ImportTarget, WriteOutcome } from './import-target.js';
import type { LegacySource, Row } from './legacy-source.js';

/** Progress is told each time this many more rows of a table are read. */
export const PROGRESS_EVERY = 1_000;
/** Rows per batch, and so per database command, unless told otherwise. */
export const DEFAULT_BATCH_SIZE = 1_000;
/** A batch of conversations also ends at this much `data`, so memory stays bounded whatever the rows hold. */
const BATCH_BYTES = 16 * 1024 * 1024;

/** A row left out: its table, its key and why. */
export interface Problem {
  table: LegacyTable;
  key: string;
  reason: string;
}

export interface ImportProgress {
  table: LegacyTable;
  read: number;
  total: number;
  perSecond: number;
}

export interface TableCounts {
  read: number;
  /** Written by this run (or, in a dry run, that would be). */
  written: number;
  /** There already as Chat Nio has them: an earlier run wrote them. */
  there: number;
  leftOut: number;
}

export interface ImportSummary {
  tables: Record<LegacyTable, TableCounts>;
  /** Sums of the balances, in micro-points: read = written (or there already) + left out. */
  balances: { read: bigint; written: bigint; leftOut: bigint };
  /** Binary floating point balances (SQLite) that had more than six decimals, rounded to six. */
  roundedBalances: number;
  /** False when stopped before the end; the next run finishes it. */
  complete: boolean;
}

export interface ImportOptions {
  batchSize: number;
  /** Asked after each batch: true stops the run there, with every batch before it written. */
  shouldStop(): boolean;
  onProblem(problem: Problem): void;
  onProgress(progress: ImportProgress): void;
}

/**
 * Reads a Chat Nio database table by table (users with their balances, then API keys, gifts and
 * conversations), in batches, checks every row, and hands each batch to `target`. Nothing is
 * held beyond one batch but the ids of the users read, which the other tables' rows need.
 * `totals` are the rows of each table (`countLegacyRows`, which also checks the tables are Chat Nio's).
 */
export async function importChatNio(
  source: LegacySource,
  totals: Record<LegacyTable, number>,
  target: ImportTarget,
  options: ImportOptions,
): Promise<ImportSummary> {
  return new ImportRun(source, target, options, totals).run();
}

/** One table's rows of a user, and how they come across. */
interface RowsPass<Record> {
  table: LegacyTable;
  sql: string;
  check: (row: Row) => Checked<Record>;
  keyFor: (row: Row) => string;
  write: (records: Record[]) => Promise<WriteOutcome[]>;
  /** What a row weighs towards `BATCH_BYTES`; nothing unless given. */
  weigh?: (row: Row) => number;
  /** After a batch is written: every row read in it. */
  afterBatch?: (rows: Row[]) => Promise<void>;
}

class ImportRun {
  private readonly summary: ImportSummary = {
    tables: Object.fromEntries(LEGACY_TABLES.map((table) => [table, { read: 0, written: 0, there: 0, leftOut: 0 }])) as Record<
      LegacyTable,
      TableCounts
    >,
    balances: { read: 0n, written: 0n, leftOut: 0n },
    roundedBalances: 0,
    complete: false,
  };
  /** Users held here as Chat Nio has them, whose rows in the other tables may follow. */
  private readonly users = new Set<number>();
  private readonly leftOutUsers = new Set<number>();
  private stopped = false;

  constructor(
    private readonly source: LegacySource,
    private readonly target: ImportTarget,
    private readonly options: ImportOptions,
    private readonly totals: Record<LegacyTable, number>,
  ) {}

  async run(): Promise<ImportSummary> {
    const passes = [
      () => this.importUsers(),
      () => this.reportOrphanQuotas(),
      () =>
        this.importRows({
          table: 'apikey',
          sql: LEGACY_QUERIES.apiKeys,
          check: apiKeyOf,
          keyFor: (row) => keyOf(row, 'id', 'user_id'),
          write: (keys) => this.target.apiKeys(keys),
        }),
      () =>
        this.importRows({
          table: 'package',
          sql: LEGACY_QUERIES.gifts,
          check: giftOf,
          keyFor: (row) => keyOf(row, 'user_id', 'type'),
          write: (gifts) => this.target.gifts(gifts),
        }),
      () =>
        this.importRows({
          table: 'conversation',
          sql: LEGACY_QUERIES.conversations,
          check: conversationOf,
          keyFor: (row) => keyOf(row, 'user_id', 'conversation_id'),
          write: (conversations) => this.target.conversations(conversations),
          weigh: (row) => (typeof row.data === 'string' ? row.data.length : 0),
          afterBatch: (rows) => this.target.reserveConversationNumbers(this.highestNumbers(rows)),
        }),
    ];
    for (const pass of passes) {
      await pass();
      if (this.stopped) return this.summary;
    }
    this.summary.complete = true;
    return this.summary;
  }

  /** Users with their balances: `auth` rows, each with its `quota` row when it has one. */
  private async importUsers(): Promise<void> {
    for await (const rows of this.batches('auth', LEGACY_QUERIES.users)) {
      const accepted: { user: LegacyUser; hasQuota: boolean }[] = [];
      for (const row of rows) {
        const hasQuota = row.quota_id !== null && row.quota_id !== undefined;
        this.counts('auth').read += 1;
        if (hasQuota) this.counts('quota').read += 1;
        const user = this.checkUser(row, hasQuota);
        if (user !== null) accepted.push({ user, hasQuota });
      }
      const outcomes = await this.target.users(accepted.map(({ user }) => user));
      outcomes.forEach((outcome, index) => {
        const { user, hasQuota } = accepted[index]!;
        if (typeof outcome === 'object')
          return this.leaveOutUser(user.id, keyOf({ id: user.id }, 'id'), outcome.conflict, hasQuota, user.balanceMicros);
        this.users.add(user.id);
        this.counted('auth', outcome);
        if (hasQuota) this.counted('quota', outcome);
        this.summary.balances.written += BigInt(user.balanceMicros);
      });
    }
  }

  /** The user of an `auth` row with its balance, or null when it is left out (and said why). */
  private checkUser(row: Row, hasQuota: boolean): LegacyUser | null {
    const id = userIdOf(row.id);
    const balance = balanceOf(row.quota);
    if (!balance.ok) {
      this.leaveOut('quota', keyOf({ user_id: row.id }, 'user_id'), balance.reason);
      this.leaveOutUser(id, keyOf(row, 'id'), 'its balance cannot be read (see quota)', false, 0);
      return null;
    }
    this.summary.balances.read += BigInt(balance.value.micros);
    if (balance.value.rounded) this.summary.roundedBalances += 1;
    const user = userOf(row, balance.value);
    if (user.ok) return user.value;
    this.leaveOutUser(id, keyOf(row, 'id'), user.reason, hasQuota, balance.value.micros);
    return null;
  }

  /** Quota rows of no user: each is listed, its balance counted as read and left out. */
  private async reportOrphanQuotas(): Promise<void> {
    for await (const rows of this.batches('quota', LEGACY_QUERIES.orphanQuotas)) {
      for (const row of rows) {
        this.counts('quota').read += 1;
        const balance = balanceOf(row.quota);
        if (balance.ok) {
          this.summary.balances.read += BigInt(balance.value.micros);
          this.summary.balances.leftOut += BigInt(balance.value.micros);
        }
        const key = row.user_id === null ? keyOf(row, 'id') : keyOf(row, 'user_id');
        this.leaveOut('quota', key, row.user_id === null ? 'user_id is NULL' : `no user ${String(row.user_id)} in auth`);
      }
    }
  }

  /** The rows of a table that belong to a user: each comes across only with its user. */
  private async importRows<Record extends { userId: number }>(pass: RowsPass<Record>): Promise<void> {
    const { table, check, keyFor, write } = pass;
    for await (const rows of this.batches(table, pass.sql, pass.weigh)) {
      const accepted: { record: Record; key: string }[] = [];
      for (const row of rows) {
        this.counts(table).read += 1;
        const checked = check(row);
        const reason = checked.ok ? this.ownerProblem(checked.value.userId) : checked.reason;
        if (reason !== null) this.leaveOut(table, keyFor(row), reason);
        else if (checked.ok) accepted.push({ record: checked.value, key: keyFor(row) });
      }
      const outcomes = await write(accepted.map(({ record }) => record));
      outcomes.forEach((outcome, index) => {
        if (typeof outcome === 'object') this.leaveOut(table, accepted[index]!.key, outcome.conflict);
        else this.counted(table, outcome);
      });
      await pass.afterBatch?.(rows);
    }
  }

  /**
   * The highest conversation number of each user among these rows, those left out included: a
   * number Chat Nio gave is never given to another conversation here, so a row fixed in Chat Nio
   * and imported later still finds its number free.
   */
  private highestNumbers(rows: Row[]): Map<number, number> {
    const highest = new Map<number, number>();
    for (const row of rows) {
      const userId = userIdOf(row.user_id);
      const number = row.conversation_id;
      if (userId === undefined || !this.users.has(userId) || !isConversationNumber(number)) continue;
      highest.set(userId, Math.max(highest.get(userId) ?? 0, number));
    }
    return highest;
  }

  /**
   * The rows of one query, in batches of `batchSize` rows (and `BATCH_BYTES` as `weigh` counts
   * them). After each batch is handled, progress is told and a stop asked for is honoured.
   */
  private async *batches(table: LegacyTable, sql: string, weigh: (row: Row) => number = () => 0): AsyncGenerator<Row[]> {
    const started = performance.now();
    let reported = this.counts(table).read;
    let batch: Row[] = [];
    let bytes = 0;
    const handled = () => {
      const { read } = this.counts(table);
      if (read - reported >= PROGRESS_EVERY) {
        reported = read;
        const perSecond = Math.round(read / ((performance.now() - started) / 1000));
        this.options.onProgress({ table, read, total: this.totals[table], perSecond });
      }
      this.stopped = this.options.shouldStop();
    };
    for await (const row of this.source.rows(sql)) {
      batch.push(row);
      bytes += weigh(row);
      if (batch.length < this.options.batchSize && bytes < BATCH_BYTES) continue;
      yield batch;
      handled();
      if (this.stopped) return;
      [batch, bytes] = [[], 0];
    }
    if (batch.length === 0) return;
    yield batch;
    handled();
  }

  private ownerProblem(userId: number): string | null {
    if (this.users.has(userId)) return null;
    return this.leftOutUsers.has(userId) ? `user ${userId} was left out (see auth)` : `no user ${userId} in auth`;
  }

  /** A user left out, with its quota row when it has one: that row's balance is counted as left out. */
  private leaveOutUser(id: number | undefined, key: string, reason: string, hasQuota: boolean, micros: number): void {
    if (id !== undefined) this.leftOutUsers.add(id);
    this.leaveOut('auth', key, reason);
    if (!hasQuota) return;
    this.leaveOut('quota', key.replace(/^id=/, 'user_id='), 'its user was left out (see auth)');
    this.summary.balances.leftOut += BigInt(micros);
  }

  private leaveOut(table: LegacyTable, key: string, reason: string): void {
    this.counts(table).leftOut += 1;
    this.options.onProblem({ table, key, reason });
  }

  private counted(table: LegacyTable, outcome: 'written' | 'there'): void {
    this.counts(table)[outcome] += 1;
  }

  private counts(table: LegacyTable): TableCounts {
    return this.summary.tables[table];
  }
}

function isConversationNumber(value: unknown): value is number {
  return seedRules.id.safeParse(value).success;
}
