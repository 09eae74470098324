import { conversationRules } from '../conversations/index.js';
import {
  apiKeyOf,
  balanceOf,
  cellsOf,
  type Checked,
  type ColumnLimits,
  columnLimits,
  conversationOf,
  giftOf,
  keyOf,
  LEGACY_TABLES,
  type LegacyBalance,
  type LegacyQueries,
  legacyQueries,
  type LegacyTable,
  type LegacyUser,
  shownCell,
  TABLE_SHAPES,
  userIdOf,
  userOf,
} from './chat-nio.js';
import type { ImportTarget, WriteOutcome } from './import-target.js';
import type { LegacySource, Row } from './legacy-source.js';
import { allSame, fingerprint, type RepeatedKey, repeatedKeys, rowsByUser, type UserRows } from './row-groups.js';

/** Progress is told each time this many more rows of a table are read. */
export const PROGRESS_EVERY = 1_000;
/** Rows per batch, and so per database command, unless told otherwise. */
export const DEFAULT_BATCH_SIZE = 1_000;
/**
 * The largest `data` cell read unless told otherwise, in MiB: a conversation's document holds at
 * most 16 MiB, and `data` keeps fields that do not come across; on MySQL the column holds 16 MiB.
 */
export const DEFAULT_MAX_DATA_MIB = 64;
/** The most `--max-data-mib` may be: Node cannot hold a string of 512 MiB, and a cell is text once read. */
export const MAX_DATA_MIB = 256;
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
  /** There already as Chat Nio has them: an earlier run wrote them, or this run did from an earlier copy of the row. */
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
  /** The largest `data` cell read, in bytes: a larger one is left out by its size, never read. */
  maxDataBytes: number;
  /** Asked after each batch: true stops the run there, with every batch before it written. */
  shouldStop(): boolean;
  onProblem(problem: Problem): void;
  onProgress(progress: ImportProgress): void;
}

/**
 * Reads a Chat Nio database table by table (users with their balances, then API keys, gifts and
 * conversations), in batches, checks every row, and hands each batch to `target`. Nothing is
 * held beyond one batch but the ids of the users read, which the other tables' rows need, and
 * the keys that more than one row of a table has. Every row read is counted once: written, there
 * already, or left out (and listed). `totals` are the rows of each table (`countLegacyRows`,
 * which also checks the tables are Chat Nio's).
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
  check: (cells: Row) => Checked<Record>;
  keyFor: (row: Row) => string;
  write: (records: Record[]) => Promise<WriteOutcome[]>;
  /** What a row weighs towards `BATCH_BYTES`; nothing unless given. */
  weigh?: (row: Row) => number;
  /** After a batch is written: every row read in it. */
  afterBatch?: (rows: Row[]) => Promise<void>;
}

/** A row passed on to be written, with its key's record when other rows have that key too (their outcome is this row's). */
interface Accepted<Record> {
  record: Record;
  row: Row;
  repeat?: RepeatedKey;
}

/** Its user's rows, read side by side, and the user they make. */
interface UserCandidate {
  user: LegacyUser;
  rows: UserRows;
}

const USER_LEFT_OUT = 'its user was left out (see auth)';

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
  private readonly limits: ColumnLimits;
  private readonly queries: LegacyQueries;
  private stopped = false;

  constructor(
    private readonly source: LegacySource,
    private readonly target: ImportTarget,
    private readonly options: ImportOptions,
    private readonly totals: Record<LegacyTable, number>,
  ) {
    this.limits = columnLimits(options.maxDataBytes);
    this.queries = legacyQueries(source, this.limits);
  }

  async run(): Promise<ImportSummary> {
    const passes = [
      () => this.importUsers(),
      () =>
        this.importRows({
          table: 'apikey',
          check: apiKeyOf,
          keyFor: (row) => keyOf(row, 'id', 'user_id'),
          write: (keys) => this.target.apiKeys(keys),
        }),
      () =>
        this.importRows({
          table: 'package',
          check: giftOf,
          keyFor: (row) => keyOf(row, 'user_id', 'type'),
          write: (gifts) => this.target.gifts(gifts),
        }),
      () =>
        this.importRows({
          table: 'conversation',
          check: conversationOf,
          keyFor: (row) => keyOf(row, 'user_id', 'conversation_id'),
          write: (conversations) => this.target.conversations(conversations),
          weigh: (row) => (typeof row.data_bytes === 'number' ? row.data_bytes : 0),
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

  /** Users with their balances: each user id's `auth` rows with its `quota` rows, read side by side. */
  private async importUsers(): Promise<void> {
    const rows = rowsByUser(this.source.rows(this.queries.rows('auth')), this.source.rows(this.queries.rows('quota')));
    for await (const batch of this.batches('auth', rows)) {
      const candidates: UserCandidate[] = [];
      for (const group of batch) {
        this.counts('auth').read += group.auth.length;
        this.counts('quota').read += group.quota.length;
        const user = this.checkUser(group);
        if (user !== null) candidates.push({ user, rows: group });
      }
      const outcomes = await this.target.users(candidates.map(({ user }) => user));
      outcomes.forEach((outcome, index) => this.userWritten(candidates[index]!, outcome));
    }
  }

  /**
   * The user one id's rows make, or null when they are left out (each row listed). Its `auth`
   * rows must agree, as must its `quota` rows: copies count once, and rows that differ leave the
   * user out, since either could be the one Chat Nio reads.
   */
  private checkUser(rows: UserRows): LegacyUser | null {
    const { auth, quota } = rows;
    if (auth.length === 0) return this.leaveOutQuotas(quota, (row) => this.noUser(row));
    const balance = this.balanceOf(quota);
    if (!balance.ok) {
      this.leaveOutUser(auth, 'its balance cannot be read (see quota)');
      return this.leaveOutQuotas(quota, () => balance.reason);
    }
    this.summary.balances.read += BigInt(balance.value.micros);
    if (balance.value.rounded) this.summary.roundedBalances += 1;
    const user = this.userOf(auth, balance.value);
    if (user.ok) return user.value;
    this.summary.balances.leftOut += BigInt(balance.value.micros);
    this.leaveOutUser(auth, user.reason);
    this.leaveOutRows('quota', quota, () => USER_LEFT_OUT);
    return null;
  }

  private userOf(auth: Row[], balance: LegacyBalance): Checked<LegacyUser> {
    if (!allSame(auth, TABLE_SHAPES.auth.content)) return { ok: false, reason: `${auth.length} rows have this id, and they differ` };
    const cells = cellsOf(auth[0]!, TABLE_SHAPES.auth.checked, this.limits);
    return cells.ok ? userOf(cells.value, balance) : cells;
  }

  /** A user id's balance: 0 without a quota row, or the one its quota rows agree on. */
  private balanceOf(quota: Row[]): Checked<LegacyBalance> {
    if (!allSame(quota, TABLE_SHAPES.quota.content))
      return { ok: false, reason: `${quota.length} rows have this user_id, and they differ` };
    if (quota.length === 0) return balanceOf(null);
    const cells = cellsOf(quota[0]!, TABLE_SHAPES.quota.checked, this.limits);
    return cells.ok ? balanceOf(cells.value.quota) : cells;
  }

  private userWritten({ user, rows }: UserCandidate, outcome: WriteOutcome): void {
    if (typeof outcome === 'object') {
      this.summary.balances.leftOut += BigInt(user.balanceMicros);
      this.leaveOutUser(rows.auth, outcome.conflict);
      this.leaveOutRows('quota', rows.quota, () => USER_LEFT_OUT);
      return;
    }
    this.users.add(user.id);
    this.summary.balances.written += BigInt(user.balanceMicros);
    for (const [table, copies] of [
      ['auth', rows.auth],
      ['quota', rows.quota],
    ] as const) {
      if (copies.length === 0) continue;
      this.counts(table)[outcome] += 1;
      this.counts(table).there += copies.length - 1;
    }
  }

  /** Lists a user's `auth` rows as left out: the rows of other tables that name it are left out with it. */
  private leaveOutUser(auth: Row[], reason: string): void {
    const id = userIdOf(auth[0]!.id);
    if (id !== undefined) this.leftOutUsers.add(id);
    this.leaveOutRows('auth', auth, () => reason);
  }

  /**
   * Lists quota rows of one user id that do not come across. What can be read of their balance
   * is counted as read and left out: once when they agree, each row's when they differ.
   */
  private leaveOutQuotas(quota: Row[], reason: (row: Row) => string): null {
    const agreed = this.balanceOf(quota);
    const balances = agreed.ok ? [agreed] : quota.map((row) => this.balanceOf([row]));
    for (const balance of balances) {
      if (!balance.ok) continue;
      this.summary.balances.read += BigInt(balance.value.micros);
      this.summary.balances.leftOut += BigInt(balance.value.micros);
    }
    this.leaveOutRows('quota', quota, reason);
    return null;
  }

  private noUser(row: Row): string {
    return isNull(row, 'user_id') ? 'user_id is NULL' : `no user ${shownCell(row, 'user_id')} in auth`;
  }

  private leaveOutRows(table: 'auth' | 'quota', rows: Row[], reason: (row: Row) => string): void {
    for (const row of rows) {
      const key = table === 'auth' || isNull(row, 'user_id') ? keyOf(row, 'id') : keyOf(row, 'user_id');
      this.leaveOut(table, key, reason(row));
    }
  }

  /**
   * The rows of a table that belong to a user: each comes across only with its user. Rows that
   * share a key (the same key, gift or conversation) come across once when they are copies, the
   * others counted as there already; when they differ, none does.
   */
  private async importRows<Record extends { userId: number }>(pass: RowsPass<Record>): Promise<void> {
    const { table, write } = pass;
    const repeated = await repeatedKeys(
      this.source.rows(this.queries.repeated(table)),
      TABLE_SHAPES[table].key,
      TABLE_SHAPES[table].content,
    );
    for await (const rows of this.batches(table, this.source.rows(this.queries.rows(table)), pass.weigh)) {
      const accepted: Accepted<Record>[] = [];
      const copies: { row: Row; of: RepeatedKey }[] = [];
      for (const row of rows) {
        this.counts(table).read += 1;
        const checked = this.checkRow(pass, row, repeated);
        if (!checked.ok) this.leaveOut(table, pass.keyFor(row), checked.reason);
        else if (checked.value.repeat?.passedOn === true) copies.push({ row, of: checked.value.repeat });
        else {
          if (checked.value.repeat !== undefined) checked.value.repeat.passedOn = true;
          accepted.push({ ...checked.value, row });
        }
      }
      const outcomes = await write(accepted.map(({ record }) => record));
      const counted = (row: Row, outcome: WriteOutcome) => {
        if (typeof outcome === 'object') this.leaveOut(table, pass.keyFor(row), outcome.conflict);
        else this.counts(table)[outcome] += 1;
      };
      outcomes.forEach((outcome, index) => {
        const { row, repeat } = accepted[index]!;
        if (repeat !== undefined) repeat.outcome = outcome;
        counted(row, outcome);
      });
      // The first row of each key was written above, in this batch or an earlier one: its copies share its outcome.
      for (const { row, of } of copies) counted(row, of.outcome === 'written' ? 'there' : of.outcome!);
      await pass.afterBatch?.(rows);
    }
  }

  /** A row's record, with its key's other rows when it has some; or why it is left out. */
  private checkRow<Record extends { userId: number }>(
    pass: RowsPass<Record>,
    row: Row,
    repeated: ReadonlyMap<string, RepeatedKey>,
  ): Checked<{ record: Record; repeat?: RepeatedKey }> {
    const { key, checked } = TABLE_SHAPES[pass.table];
    const cells = cellsOf(row, checked, this.limits);
    const record = cells.ok ? pass.check(cells.value) : cells;
    if (!record.ok) return record;
    const owner = this.ownerProblem(record.value.userId);
    if (owner !== null) return { ok: false, reason: owner };
    const repeat = repeated.size === 0 ? undefined : repeated.get(fingerprint(row, key));
    if (repeat?.differ === true) return { ok: false, reason: `${repeat.rows} rows have this ${key.join(' and ')}, and they differ` };
    return { ok: true, value: { record: record.value, repeat } };
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
   * `items` in batches of `batchSize` (and `BATCH_BYTES` as `weigh` counts them). After each
   * batch is handled, progress is told and a stop asked for is honoured.
   */
  private async *batches<T>(table: LegacyTable, items: AsyncIterable<T>, weigh: (item: T) => number = () => 0): AsyncGenerator<T[]> {
    const started = performance.now();
    let reported = this.counts(table).read;
    let batch: T[] = [];
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
    for await (const item of items) {
      batch.push(item);
      bytes += weigh(item);
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

  private leaveOut(table: LegacyTable, key: string, reason: string): void {
    this.counts(table).leftOut += 1;
    this.options.onProblem({ table, key, reason });
  }

  private counts(table: LegacyTable): TableCounts {
    return this.summary.tables[table];
  }
}

/** A NULL cell, not one left unread for its size. */
function isNull(row: Row, column: string): boolean {
  return row[column] === null && row[`${column}_bytes`] === null;
}

function isConversationNumber(value: unknown): value is number {
  return conversationRules.number.safeParse(value).success;
}
