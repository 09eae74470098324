import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import sqlite from 'node-sqlite3-wasm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { hashApiKey } from '../../src/auth/api-key.js';
import { startTestDatabase, type TestDatabase } from '../support/database.js';
import { graphql, startTestGateway, type TestGateway } from '../support/gateway.js';
import { problemsOf, runImport, snapshot, summaryOf } from './after-the-move.js';
import { createHostileSqlite, DATA_LIMIT_MIB, KEYS, SQLITE_PROBLEMS, SQLITE_SUMMARY, SQLITE_USERS } from './hostile-database.js';

let directory: string;
let file: string;
let database: TestDatabase;
let gateway: TestGateway;

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'chatnio-hostile-'));
  file = join(directory, 'chatnio.db');
  createHostileSqlite(file);
  database = await startTestDatabase();
  gateway = await startTestGateway({}, { database });
});
afterAll(async () => {
  await gateway?.stop();
  await database?.stop();
  await rm(directory, { recursive: true, force: true });
});

const from = () => `sqlite:${file}`;
const limit = ['--max-data-mib', String(DATA_LIMIT_MIB)];
const get = async (path: string, authorization: string) => (await fetch(`${gateway.url}${path}`, { headers: { authorization } })).text();

describe('npm run import from a hostile SQLite file: nothing altered, nothing read beyond its limit, every row counted once', () => {
  it('the cell over the data limit cannot be read at all: its overflow pages are broken', () => {
    const raw = new sqlite.Database(file, { readOnly: true });
    try {
      expect(() => raw.all('SELECT data FROM conversation WHERE conversation_id = 12')).toThrow('database disk image is malformed');
      expect(raw.get('SELECT octet_length(data) AS bytes FROM conversation WHERE conversation_id = 12')).toEqual({ bytes: 2_097_182 });
    } finally {
      raw.close();
    }
  });

  it('lists every row it leaves out, and why, and counts exactly what it wrote', async () => {
    const run = await runImport(from(), database.uri, limit);
    expect(problemsOf(run.stderr)).toEqual(SQLITE_PROBLEMS);
    expect(run.stderr).toContain(`\nimport: ${SQLITE_PROBLEMS.length} rows left out, listed above\n`);
    expect(run.code).toBe(1);
    expect(summaryOf(run.stdout)).toEqual(SQLITE_SUMMARY);
  });

  it('stores each username exactly as Chat Nio has it, and no user both stored and listed as left out', async () => {
    const users = await gateway.models.users.find({}, { _id: 0, id: 1, username: 1, balanceMicros: 1 }).sort({ id: 1 }).lean();
    expect(users).toEqual(SQLITE_USERS);
    const listed = new Set(SQLITE_PROBLEMS.flatMap((line) => /^auth id=(\d+):/.exec(line)?.[1] ?? []).map(Number));
    expect(users.filter((user) => listed.has(user.id))).toEqual([]);
    // The user whose name had a NUL after "victim" is left out; the real victim keeps the name.
    expect(await get('/quota', await gateway.token(3))).toBe('{"status":true,"quota":1}');
    expect(await get('/quota', await gateway.token(10))).toBe('{"status":true,"quota":2.5}');
  });

  it('keeps the keys, gifts and conversations that came across whole, and only those', async () => {
    const keys = await gateway.models.apiKeys.find({}, { _id: 0, hash: 1, userId: 1 }).sort({ userId: 1 }).lean();
    expect(keys).toEqual([
      { hash: hashApiKey(KEYS.ofAlice), userId: 1 },
      { hash: hashApiKey(KEYS.ofKeys), userId: 14 },
    ]);
    expect(await get('/quota', KEYS.ofKeys)).toBe('{"status":true,"quota":4}');
    expect(await get('/quota', KEYS.twice)).not.toContain('"status":true');
    expect(await gateway.models.giftGrants.find({}, { _id: 0, userId: 1, gift: 1 }).lean()).toEqual([{ userId: 1, gift: 'cert' }]);

    const alice = await gateway.token(1);
    expect(await get('/conversation/list', alice)).toBe(
      '{"status":true,"message":"","data":[' +
        '{"id":13,"user_id":1,"name":"copy","message":null,"model":"gpt-4o","enable_web":false},' +
        '{"id":9,"user_id":1,"name":"   ","message":null,"model":"gpt-4o","enable_web":false},' +
        '{"id":8,"user_id":1,"name":"","message":null,"model":"gpt-4o","enable_web":false},' +
        '{"id":1,"user_id":1,"name":"Trip ✈️","message":null,"model":"gpt-4o","enable_web":false}]}',
    );
    expect(await get('/conversation/load?id=1', alice)).toBe(
      '{"status":true,"message":"success","data":{"id":1,"user_id":1,"name":"Trip ✈️",' +
        '"message":[{"role":"user","content":"héllo 🚀"}],"model":"gpt-4o","enable_web":false}}',
    );
    const { body } = await graphql(gateway, '{ conversations { totalCount } }', { authorization: alice });
    expect(body.data).toEqual({ conversations: { totalCount: 4 } });
    // Every number Chat Nio gave alice stays hers, those left out included.
    expect(await gateway.models.users.findOne({ id: 1 }, { _id: 0, lastConversationId: 1 }).lean()).toEqual({ lastConversationId: 14 });
  });

  it('changes nothing when run again, and finds there already exactly what it wrote', async () => {
    const before = await snapshot(database.uri);
    const run = await runImport(from(), database.uri, limit);
    expect(run.code).toBe(1);
    expect(problemsOf(run.stderr)).toEqual(SQLITE_PROBLEMS);
    const { tables, balances } = SQLITE_SUMMARY;
    const again = Object.fromEntries(
      Object.entries(tables).map(([table, line]) => [table, { ...line, written: 0, there: line.written + line.there }]),
    );
    expect(summaryOf(run.stdout)).toEqual({ tables: again, balances });
    expect(await snapshot(database.uri)).toEqual(before);
  });

  it('gives the same report and counts in a dry run', async () => {
    const run = await runImport(from(), undefined, [...limit, '--dry-run']);
    expect(run.code).toBe(1);
    expect(problemsOf(run.stderr)).toEqual(SQLITE_PROBLEMS);
    expect(summaryOf(run.stdout)).toEqual(SQLITE_SUMMARY);
  });
});
