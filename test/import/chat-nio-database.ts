import { createChatNioOnMariaDb, createChatNioOnSqlite, goJson, type Insert } from '../support/chat-nio.js';
import type { PrivateMariaDb } from '../support/mariadb.js';

/**
 * A Chat Nio database as Chat Nio makes it, on MariaDB and on SQLite: its tables (the columns and
 * types of `connection/database.go` in coaidev/coai, as it creates them on each engine) and rows
 * that cover what a real one holds, the odd rows included. Each row that cannot come across says
 * which line the import's problems report must give for it.
 */

export type Engine = 'mariadb' | 'sqlite';

export interface LegacyUser {
  id: number;
  username: string | null;
  /** The `quota` column as MariaDB holds it (`DECIMAL(24,6)`); undefined: no quota row at all. */
  quota?: string | null;
  /** What `/quota` must answer when Chat Nio's SQLite copy of it (a float32 made double) reads otherwise. */
  sqliteQuota?: string;
  /** The problems report's lines for this user, when it is left out. */
  leftOut?: string[];
}

export interface LegacyConversation {
  userId: number;
  id: number;
  name: string | null;
  /** The `data` column as Chat Nio writes it: Go's JSON of its messages, or null. */
  data: string | null;
  model: string;
  leftOut?: string;
  /** Only in the SQLite database (MariaDB's column types cannot hold it). */
  sqliteOnly?: boolean;
}

/** Messages with every field Chat Nio's message type has: only role and content come across. */
export const TRIP_MESSAGES = [
  { role: 'system', content: 'You are a travel agent.' },
  { role: 'user', content: 'Two days in Kyōto — budget < 300 € & no flights?', name: 'alice' },
  {
    role: 'assistant',
    content: 'Day 1: Fushimi Inari ⛩️, then Nishiki market.',
    reasoning_content: 'Trains only; the budget rules out the ryokan.',
    tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'search', arguments: '{"q":"kyoto"}' } }],
  },
  { role: 'tool', content: '{"results":[]}', tool_call_id: 'call_1' },
];

/** Bob's conversations: a few thousand for one user. */
export const BOB_CONVERSATIONS = 3_000;

export const USERS: LegacyUser[] = [
  {
    id: -1,
    username: 'minus',
    quota: '5.000000',
    leftOut: ['auth id=-1: id: must be an integer from 1 to 2147483647', 'quota user_id=-1: its user was left out (see auth)'],
  },
  { id: 1, username: 'alice', quota: '3.141593' },
  { id: 2, username: '李雷🚀', quota: '12.500000' },
  { id: 3, username: 'bob' },
  { id: 4, username: 'carol', quota: '0.000001' },
  { id: 5, username: 'dave', quota: '123456789.123456', sqliteQuota: '123456792' },
  { id: 6, username: 'erin', quota: '-0.250000' },
  { id: 7, username: 'frank', quota: null },
  {
    id: 8,
    username: null,
    quota: '1.000000',
    leftOut: ['auth id=8: username: is required', 'quota user_id=8: its user was left out (see auth)'],
  },
];

/** Chat Nio's keys: `sk-` and 64 hexadecimal digits. */
export const API_KEYS = [
  { userId: 1, key: `sk-${'a1'.repeat(32)}` },
  { userId: 2, key: `sk-${'b2'.repeat(32)}` },
  { userId: 8, key: `sk-${'c3'.repeat(32)}`, leftOut: 'apikey id=3 user_id=8: user 8 was left out (see auth)' },
  {
    userId: 4,
    key: 'not-a-key',
    leftOut:
      'apikey id=4 user_id=4: api_key: must start with sk-, be 12 to 4096 characters long and hold only printable ASCII without spaces',
  },
];

export const PACKAGES = [
  { userId: 1, type: 'cert' },
  { userId: 2, type: 'cert' },
  { userId: 2, type: 'teenager' },
  { userId: 4, type: 'vip', leftOut: 'package user_id=4 type="vip": type: "vip" is not a gift package here (cert, teenager)' },
];

export const CONVERSATIONS: LegacyConversation[] = [
  { userId: 1, id: 1, name: 'Kyōto ✈️ 旅行', data: goJson(TRIP_MESSAGES), model: 'gpt-4o' },
  // What Chat Nio saves for a conversation without messages.
  { userId: 1, id: 2, name: 'new chat', data: 'null', model: 'gpt-4o-mini' },
  {
    userId: 1,
    id: 3,
    name: 'broken',
    data: 'not json{',
    model: 'gpt-4o',
    leftOut: 'conversation user_id=1 conversation_id=3: data is not JSON (Unexpected token \'o\', "not json{" is not valid JSON)',
  },
  {
    userId: 1,
    id: 4,
    name: 'an object',
    data: '{"role":"user","content":"hi"}',
    model: 'gpt-4o',
    leftOut: 'conversation user_id=1 conversation_id=4: data is not a JSON array of messages but an object',
  },
  {
    userId: 1,
    id: 5,
    name: 'no content',
    data: '[{"role":"user"}]',
    model: 'gpt-4o',
    leftOut: 'conversation user_id=1 conversation_id=5: data[0].content: is required',
  },
  // Chat Nio's rename stores any text, the empty string included, and it names a conversation after
  // its first message: an empty name comes across as it is.
  { userId: 1, id: 6, name: '', data: '[]', model: 'claude-3-haiku' },
  {
    userId: 1,
    id: 7,
    name: `${'名'.repeat(250)}${'🚀'.repeat(7)}`,
    data: null,
    model: 'gpt-4o',
    sqliteOnly: true,
    leftOut: 'conversation user_id=1 conversation_id=7: conversation_name: must be at most 255 characters',
  },
  {
    userId: 1,
    id: 8,
    name: 'a long paste',
    data: goJson([{ role: 'user', content: 'x'.repeat(17 * 1024 * 1024) }]),
    model: 'gpt-4o',
    sqliteOnly: true,
    leftOut: "conversation user_id=1 conversation_id=8: 17.0 MiB as a document, over MongoDB's limit of 16.0 MiB",
  },
  // Blank names, and one of 255 characters, Chat Nio's column's widest.
  { userId: 1, id: 9, name: ' ', data: null, model: 'gpt-4o' },
  { userId: 1, id: 10, name: '\t\u3000 ', data: goJson([{ role: 'user', content: ' ' }]), model: 'gpt-4o' },
  { userId: 1, id: 11, name: '名'.repeat(255), data: goJson([{ role: 'user', content: '长' }]), model: 'gpt-4o' },
  // A NULL name is not a name: listed, as Chat Nio never shows one.
  {
    userId: 1,
    id: 12,
    name: null,
    data: null,
    model: 'gpt-4o',
    leftOut: 'conversation user_id=1 conversation_id=12: conversation_name: is required',
  },
  { userId: 2, id: 1, name: '周末计划', data: goJson([{ role: 'user', content: '周末去哪儿？' }]), model: 'qwen-plus' },
  {
    userId: 4,
    id: 0,
    name: 'zero',
    data: null,
    model: 'gpt-4o',
    leftOut: 'conversation user_id=4 conversation_id=0: conversation_id: must be an integer from 1 to 2147483647',
  },
  {
    userId: 99,
    id: 1,
    name: 'orphan',
    data: null,
    model: 'gpt-4o',
    leftOut: 'conversation user_id=99 conversation_id=1: no user 99 in auth',
  },
  {
    userId: -1,
    id: 1,
    name: 'of minus',
    data: null,
    model: 'gpt-4o',
    leftOut: 'conversation user_id=-1 conversation_id=1: user_id: must be an integer from 1 to 2147483647',
  },
  {
    userId: 8,
    id: 1,
    name: 'nameless',
    data: null,
    model: 'gpt-4o',
    leftOut: 'conversation user_id=8 conversation_id=1: user 8 was left out (see auth)',
  },
  ...Array.from({ length: BOB_CONVERSATIONS }, (_, index) => ({
    userId: 3,
    id: index + 1,
    name: `Question ${index + 1}`,
    data: goJson([
      { role: 'user', content: `What is ${index} + 1?` },
      { role: 'assistant', content: `${index + 1}.` },
    ]),
    model: 'gpt-3.5-turbo-0613',
  })),
];

/** Rows only a SQLite database can hold: an id beyond INT, and a quota row of no user (SQLite does not enforce foreign keys). */
const SQLITE_USERS: LegacyUser[] = [
  { id: 4_294_967_296, username: 'huge', leftOut: ['auth id=4294967296: id: must be an integer from 1 to 2147483647'] },
];
const SQLITE_ORPHAN_QUOTAS = [{ userId: 77, quota: 2.5, leftOut: 'quota user_id=77: no user 77 in auth' }];

export function usersOn(engine: Engine): LegacyUser[] {
  return engine === 'sqlite' ? [...USERS, ...SQLITE_USERS] : USERS;
}

export function conversationsOn(engine: Engine): LegacyConversation[] {
  return CONVERSATIONS.filter((conversation) => engine === 'sqlite' || !conversation.sqliteOnly);
}

/**
 * The problems report the import must print for this database, in its order: users and the quota
 * rows of no user by user id, then keys, gifts, conversations.
 */
export function expectedProblems(engine: Engine): string[] {
  const byUser = [
    ...usersOn(engine).map((user) => ({ id: user.id, lines: user.leftOut ?? [] })),
    ...(engine === 'sqlite' ? SQLITE_ORPHAN_QUOTAS.map((quota) => ({ id: quota.userId, lines: [quota.leftOut] })) : []),
  ];
  return [
    ...byUser.sort((a, b) => a.id - b.id).flatMap((user) => user.lines),
    ...API_KEYS.flatMap((key) => key.leftOut ?? []),
    ...PACKAGES.flatMap((gift) => gift.leftOut ?? []),
    ...conversationsOn(engine).flatMap((conversation) => conversation.leftOut ?? []),
  ];
}

/** Every row, table by table, with the columns Chat Nio fills; `quota` as `toQuota` gives it to the engine. */
function inserts(engine: Engine, toQuota: (text: string) => unknown): Insert[] {
  const users = usersOn(engine);
  return [
    ...users.map((user) => ({
      table: 'auth',
      columns: ['id', 'username', 'token', 'password', 'email'],
      values: [user.id, user.username, `token-${user.id}`, 'f'.repeat(64), `${user.id}@example.com`],
    })),
    ...users
      .filter((user) => user.quota !== undefined)
      .map((user) => ({
        table: 'quota',
        columns: ['user_id', 'quota', 'used'],
        values: [user.id, user.quota === null ? null : toQuota(user.quota!), 0],
      })),
    ...(engine === 'sqlite'
      ? SQLITE_ORPHAN_QUOTAS.map((quota) => ({
          table: 'quota',
          columns: ['user_id', 'quota', 'used'],
          values: [quota.userId, quota.quota, 0],
        }))
      : []),
    ...API_KEYS.map((key) => ({ table: 'apikey', columns: ['user_id', 'api_key'], values: [key.userId, key.key] })),
    ...PACKAGES.map((gift) => ({ table: 'package', columns: ['user_id', 'type'], values: [gift.userId, gift.type] })),
    ...conversationsOn(engine).map((conversation) => ({
      table: 'conversation',
      columns: ['user_id', 'conversation_id', 'conversation_name', 'data', 'model'],
      values: [conversation.userId, conversation.id, conversation.name, conversation.data, conversation.model],
    })),
  ];
}

/** Creates database `name` on the server, with Chat Nio's tables and every row above. */
export function createMariaDbDatabase(server: PrivateMariaDb, name: string): Promise<void> {
  return createChatNioOnMariaDb(
    server,
    name,
    inserts('mariadb', (text) => text),
  );
}

/**
 * Creates Chat Nio's SQLite file at `path` with every row above, balances passed as float32 as
 * its Go code passes them (SQLite keeps the double nearest).
 */
export function createSqliteDatabase(path: string): void {
  createChatNioOnSqlite(
    path,
    inserts('sqlite', (text) => Math.fround(Number(text))),
  );
}

/** The balance Chat Nio's data gives a user on an engine, as decimal text: its quota, or 0 without one. */
export function balanceText(user: LegacyUser, engine: Engine): string {
  return (engine === 'sqlite' ? user.sqliteQuota : undefined) ?? user.quota ?? '0';
}

/** A decimal text in micro-points, exactly, e.g. '-0.250000' → -250000n. */
export function microsOf(text: string): bigint {
  const [whole, fraction = ''] = text.replace(/^-/, '').split('.');
  const magnitude = BigInt(`${whole}${fraction.padEnd(6, '0')}`);
  return text.startsWith('-') ? -magnitude : magnitude;
}

export interface TableLine {
  read: number;
  written: number;
  there: number;
  leftOut: number;
}

/** What the closing summary must count on this engine, for a first run (`written`) or a run after one (`there`). */
export function expectedSummary(engine: Engine, outcome: 'written' | 'there') {
  const line = (rows: { leftOut?: unknown }[]): TableLine => {
    const leftOut = rows.filter((row) => row.leftOut !== undefined).length;
    const across = rows.length - leftOut;
    return { read: rows.length, written: outcome === 'written' ? across : 0, there: outcome === 'there' ? across : 0, leftOut };
  };
  const users = usersOn(engine);
  const quotaRows = [
    ...users
      .filter((user) => user.quota !== undefined)
      .map((user) => ({ leftOut: user.leftOut, micros: microsOf(balanceText(user, engine)) })),
    ...(engine === 'sqlite'
      ? SQLITE_ORPHAN_QUOTAS.map((quota) => ({ leftOut: quota.leftOut, micros: microsOf(String(quota.quota)) }))
      : []),
  ];
  const sum = (rows: { micros: bigint }[]) => rows.reduce((total, row) => total + row.micros, 0n);
  return {
    tables: {
      auth: line(users),
      quota: line(quotaRows),
      apikey: line(API_KEYS),
      package: line(PACKAGES),
      conversation: line(conversationsOn(engine)),
    },
    balances: {
      read: sum(quotaRows),
      written: sum(quotaRows.filter((row) => row.leftOut === undefined)),
      leftOut: sum(quotaRows.filter((row) => row.leftOut !== undefined)),
    },
  };
}
