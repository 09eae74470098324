import { readFileSync, writeFileSync } from 'node:fs';

import { createChatNioOnMariaDb, createChatNioOnSqlite, goJson, type Insert } from '../support/chat-nio.js';
import type { PrivateMariaDb } from '../support/mariadb.js';

/**
 * Chat Nio databases an import must survive without altering anything: text holding a NUL, bytes
 * that are not UTF-8 (0xFF, 0xFE, a surrogate encoded as UTF-8), cells far beyond what their
 * column may hold, blank names, and (on SQLite, in tables without keys) rows that repeat, the same
 * or with other values. Each row says what the import must make of it.
 */

/** Text as bytes: strings in UTF-8, numbers as raw bytes (`bytes('ev', [0xff], 'il')`). */
export function bytes(...parts: (string | number[])[]): Uint8Array {
  return Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part, 'utf8') : Buffer.from(part))));
}

/** The `data` limit the hostile imports run with (`--max-data-mib 1`). */
export const DATA_LIMIT_MIB = 1;
/** The content of the conversation too large to be read: its overflow pages are broken on SQLite, so any read of it fails. */
const UNREADABLE_CONTENT = 'Q'.repeat(2 * 1024 * 1024);
export const UNREADABLE_DATA = goJson([{ role: 'user', content: UNREADABLE_CONTENT }]);
const UNREADABLE_BYTES = Buffer.byteLength(UNREADABLE_DATA);
const FIVE_MB_USERNAME = 'u'.repeat(5_000_000);
const TEN_MIB_KEY = `sk-${'e'.repeat(10 * 1024 * 1024)}`;

export const KEYS = {
  ofKeys: `sk-${'a'.repeat(64)}`,
  ofAlice: `sk-${'c'.repeat(64)}`,
  twice: `sk-${'d'.repeat(64)}`,
};

const auth = (id: number, username: string | Uint8Array): Insert => ({
  table: 'auth',
  columns: ['id', 'username', 'token', 'password'],
  values: [id, username, `token-${id}`, 'f'.repeat(64)],
});
const quota = (userId: number, points: number): Insert => ({
  table: 'quota',
  columns: ['user_id', 'quota', 'used'],
  values: [userId, points, 0],
});
const apiKey = (id: number, userId: number, key: string | Uint8Array): Insert => ({
  table: 'apikey',
  columns: ['id', 'user_id', 'api_key'],
  values: [id, userId, key],
});
const gift = (id: number, userId: number, type: string | Uint8Array): Insert => ({
  table: 'package',
  columns: ['id', 'user_id', 'type'],
  values: [id, userId, type],
});
const conversation = (
  id: number,
  userId: number,
  number: number,
  name: string | Uint8Array,
  data: string | Uint8Array | null = goJson([{ role: 'user', content: `message of ${id}` }]),
  model: string | Uint8Array = 'gpt-4o',
): Insert => ({
  table: 'conversation',
  columns: ['id', 'user_id', 'conversation_id', 'conversation_name', 'data', 'model'],
  values: [id, userId, number, name, data, model],
});

/** The SQLite file's rows, its tables without keys. Balances are exact in binary, so no rounding enters the sums. */
export const SQLITE_ROWS: Insert[] = [
  auth(1, 'alice'),
  auth(2, bytes('victim', [0], 'x')),
  auth(3, 'victim'),
  auth(4, bytes('nul', [0], 'byte')),
  auth(5, bytes('ev', [0xff], 'il')),
  auth(6, bytes('ev', [0xfe], 'il')),
  auth(7, bytes('lone', [0xed, 0xa0, 0x80])),
  auth(8, FIVE_MB_USERNAME),
  auth(9, 'n'.repeat(256)),
  auth(10, 'copy'),
  auth(10, 'copy'),
  auth(11, 'twin-a'),
  auth(11, 'twin-b'),
  auth(12, 'split'),
  auth(13, '\uFEFFbom'),
  auth(14, 'keys'),
  quota(1, 1.5),
  ...[2, 3, 4, 5, 6, 7, 8, 9].map((userId) => quota(userId, 1)),
  quota(10, 2.5),
  quota(10, 2.5),
  quota(11, 1),
  quota(12, 1),
  quota(12, 2),
  quota(13, 0.25),
  quota(14, 4),
  quota(99, 0.5),
  apiKey(1, 14, KEYS.ofKeys),
  apiKey(2, 14, bytes(`sk-${'b'.repeat(30)}`, [0], 'c'.repeat(30))),
  apiKey(3, 14, bytes('sk-', [0xff], 'd'.repeat(20))),
  apiKey(4, 14, TEN_MIB_KEY),
  apiKey(5, 14, 'sk-with space 0123'),
  apiKey(6, 1, KEYS.ofAlice),
  apiKey(7, 1, KEYS.ofAlice),
  apiKey(8, 14, KEYS.twice),
  apiKey(9, 1, KEYS.twice),
  apiKey(10, 2, `sk-${'9'.repeat(64)}`),
  gift(1, 1, 'cert'),
  gift(2, 1, 'cert'),
  gift(3, 1, bytes('teenager', [0])),
  gift(4, 1, bytes('cert', [0xff])),
  conversation(1, 1, 1, 'Trip ✈️', goJson([{ role: 'user', content: 'héllo 🚀' }])),
  conversation(2, 1, 2, bytes('nul', [0], 'name')),
  conversation(3, 1, 3, bytes('bad', [0xff], 'name')),
  conversation(4, 1, 4, 'nul content', '[{"role":"user","content":"a\\u0000b"}]'),
  conversation(5, 1, 5, 'raw nul', bytes('[{"role":"user","content":"a', [0], 'b"}]')),
  conversation(6, 1, 6, 'bad data', bytes('[{"role":"user","content":"', [0xff], '"}]')),
  conversation(7, 1, 7, 'lone', '[{"role":"user","content":"\\ud800"}]'),
  // Names as Chat Nio's rename stores them: they come across as they are.
  conversation(8, 1, 8, ''),
  conversation(9, 1, 9, '   ', null),
  conversation(10, 1, 10, 'long model', undefined, 'm'.repeat(256)),
  conversation(11, 1, 11, 'long role', goJson([{ role: 'r'.repeat(65), content: 'x' }])),
  conversation(12, 1, 12, 'huge', UNREADABLE_DATA),
  conversation(13, 1, 13, 'copy'),
  conversation(13, 1, 13, 'copy'),
  conversation(15, 1, 14, 'twin a'),
  conversation(16, 1, 14, 'twin b'),
  conversation(17, 2, 1, 'of victim\\0x'),
];

/** The problems report of importing the SQLite file, line by line, in its order. */
export const SQLITE_PROBLEMS = [
  'auth id=2: username: holds a NUL character',
  'quota user_id=2: its user was left out (see auth)',
  'auth id=4: username: holds a NUL character',
  'quota user_id=4: its user was left out (see auth)',
  ...[5, 6, 7].flatMap((id) => [`auth id=${id}: username: is not valid UTF-8`, `quota user_id=${id}: its user was left out (see auth)`]),
  'auth id=8: username: 5000000 bytes, over the limit of 1020 bytes: not read',
  'quota user_id=8: its user was left out (see auth)',
  'auth id=9: username: must be at most 255 characters',
  'quota user_id=9: its user was left out (see auth)',
  'auth id=11: 2 rows have this id, and they differ',
  'auth id=11: 2 rows have this id, and they differ',
  'quota user_id=11: its user was left out (see auth)',
  'auth id=12: its balance cannot be read (see quota)',
  'quota user_id=12: 2 rows have this user_id, and they differ',
  'quota user_id=12: 2 rows have this user_id, and they differ',
  'quota user_id=99: no user 99 in auth',
  'apikey id=2 user_id=14: api_key: holds a NUL character',
  'apikey id=3 user_id=14: api_key: is not valid UTF-8',
  'apikey id=4 user_id=14: api_key: 10485763 bytes, over the limit of 4096 bytes: not read',
  'apikey id=5 user_id=14: api_key: must start with sk-, be 12 to 4096 characters long and hold only printable ASCII without spaces',
  'apikey id=8 user_id=14: 2 rows have this api_key, and they differ',
  'apikey id=9 user_id=1: 2 rows have this api_key, and they differ',
  'apikey id=10 user_id=2: user 2 was left out (see auth)',
  'package user_id=1 type="teenager\\u0000": type: holds a NUL character',
  "package user_id=1 type=x'63657274ff': type: is not valid UTF-8",
  'conversation user_id=1 conversation_id=2: conversation_name: holds a NUL character',
  'conversation user_id=1 conversation_id=3: conversation_name: is not valid UTF-8',
  'conversation user_id=1 conversation_id=4: data[0].content: holds a NUL character',
  'conversation user_id=1 conversation_id=5: data: holds a NUL character',
  'conversation user_id=1 conversation_id=6: data: is not valid UTF-8',
  'conversation user_id=1 conversation_id=7: data[0].content: holds a lone surrogate',
  'conversation user_id=1 conversation_id=10: model: must be at most 255 characters',
  'conversation user_id=1 conversation_id=11: data[0].role: must be at most 64 characters',
  `conversation user_id=1 conversation_id=12: data: ${UNREADABLE_BYTES} bytes, over the limit of 1048576 bytes: not read`,
  'conversation user_id=1 conversation_id=14: 2 rows have this user_id and conversation_id, and they differ',
  'conversation user_id=1 conversation_id=14: 2 rows have this user_id and conversation_id, and they differ',
  'conversation user_id=2 conversation_id=1: user 2 was left out (see auth)',
];

const micros = (points: number) => BigInt(Math.round(points * 1_000_000));

/**
 * The summary of a first import of the SQLite file. A row repeated as it is counts once as
 * written and once as there already; a user's balance counts once however often its quota row
 * repeats, and each of two quota rows that differ counts on its own.
 */
export const SQLITE_SUMMARY = {
  tables: {
    auth: { read: 16, written: 5, there: 1, leftOut: 10 },
    quota: { read: 17, written: 5, there: 1, leftOut: 11 },
    apikey: { read: 10, written: 2, there: 1, leftOut: 7 },
    package: { read: 4, written: 1, there: 1, leftOut: 2 },
    conversation: { read: 17, written: 4, there: 1, leftOut: 12 },
  },
  // Written: 1.5 + 1 + 2.5 + 0.25 + 4; left out: seven users of 1, user 11's 1, user 12's 1 and 2, and 0.5 of no user.
  balances: { read: micros(20.75), written: micros(9.25), leftOut: micros(11.5) },
};

/** The users that come across, as stored: ids, usernames exactly, balances in micro-points. */
export const SQLITE_USERS = [
  { id: 1, username: 'alice', balanceMicros: 1_500_000 },
  { id: 3, username: 'victim', balanceMicros: 1_000_000 },
  { id: 10, username: 'copy', balanceMicros: 2_500_000 },
  { id: 13, username: '\uFEFFbom', balanceMicros: 250_000 },
  { id: 14, username: 'keys', balanceMicros: 4_000_000 },
];

/**
 * Creates the SQLite file, then breaks the overflow-page chain of the one `data` cell over the
 * limit: reading that cell whole (or any part past the break) fails with "database disk image is
 * malformed", so an import that finishes has not read it.
 */
export function createHostileSqlite(path: string): void {
  createChatNioOnSqlite(path, SQLITE_ROWS, { withoutKeys: true });
  breakOverflowChain(path, 'Q'.charCodeAt(0));
}

/** Ends the chain of overflow pages holding nothing but `fill` (a page's first 4 bytes: the next page's number) a few pages in. */
function breakOverflowChain(path: string, fill: number): void {
  const file = readFileSync(path);
  const pageSize = file.readUInt16BE(16);
  let seen = 0;
  for (let page = pageSize; page < file.length; page += pageSize) {
    if (!file.subarray(page + 4, page + pageSize).every((byte) => byte === fill)) continue;
    seen += 1;
    if (seen === 5) {
      file.writeUInt32BE(0, page);
      writeFileSync(path, file);
      return;
    }
  }
  throw new Error(`no overflow chain of ${String.fromCharCode(fill)} in ${path}`);
}

/**
 * The MariaDB database: Chat Nio's tables with the API key a `VARBINARY` (bytes, whatever they are)
 * and the conversation name `latin1` (one byte a character: 0xE9 is é, and comes across as é).
 * Its `utf8mb4` columns hold a NUL and a surrogate encoded as UTF-8 (which MariaDB accepts there).
 */
export function createHostileMariaDb(server: PrivateMariaDb, name: string): Promise<void> {
  return createChatNioOnMariaDb(
    server,
    name,
    [
      auth(1, 'alice'),
      auth(2, bytes('nul', [0], 'byte')),
      auth(3, bytes('lone', [0xed, 0xa0, 0x80])),
      quota(1, 1.5),
      quota(2, 1),
      quota(3, 1),
      apiKey(1, 1, KEYS.ofAlice),
      apiKey(2, 3, bytes('sk-', [0xff], 'd'.repeat(20))),
      conversation(1, 1, 1, bytes('caf', [0xe9])),
      conversation(2, 1, 2, 'huge', UNREADABLE_DATA),
      conversation(3, 1, 3, 'surrogate model', undefined, bytes('gpt', [0xed, 0xa0, 0x80])),
    ],
    {
      alter:
        'ALTER TABLE apikey MODIFY api_key VARBINARY(255); ' +
        'ALTER TABLE conversation MODIFY conversation_name VARCHAR(255) CHARACTER SET latin1',
    },
  );
}

export const MARIADB_PROBLEMS = [
  'auth id=2: username: holds a NUL character',
  'quota user_id=2: its user was left out (see auth)',
  'auth id=3: username: is not valid UTF-8',
  'quota user_id=3: its user was left out (see auth)',
  'apikey id=2 user_id=3: api_key: is not valid UTF-8',
  `conversation user_id=1 conversation_id=2: data: ${UNREADABLE_BYTES} bytes, over the limit of 1048576 bytes: not read`,
  'conversation user_id=1 conversation_id=3: model: is not valid UTF-8',
];

export const MARIADB_SUMMARY = {
  tables: {
    auth: { read: 3, written: 1, there: 0, leftOut: 2 },
    quota: { read: 3, written: 1, there: 0, leftOut: 2 },
    apikey: { read: 2, written: 1, there: 0, leftOut: 1 },
    package: { read: 0, written: 0, there: 0, leftOut: 0 },
    conversation: { read: 3, written: 1, there: 0, leftOut: 2 },
  },
  balances: { read: micros(3.5), written: micros(1.5), leftOut: micros(2) },
};
