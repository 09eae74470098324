import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { columnLimits, LEGACY_TABLES, legacyQueries, TABLE_SHAPES } from '../../src/import/chat-nio.js';
import { openMysqlSource } from '../../src/import/mysql-source.js';
import { startTestDatabase, type TestDatabase } from '../support/database.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { type PrivateMariaDb, skipsMariaDbTest, startPrivateMariaDb } from '../support/mariadb.js';
import { spawnNode } from '../support/node-process.js';
import { expectAsChatNioHasIt, problemsOf, runImport, snapshot, summaryOf } from './after-the-move.js';
import { CONVERSATIONS, createMariaDbDatabase, expectedProblems, expectedSummary } from './chat-nio-database.js';
import { createHostileMariaDb, DATA_LIMIT_MIB, KEYS, MARIADB_PROBLEMS, MARIADB_SUMMARY } from './hostile-database.js';

describe.skipIf(skipsMariaDbTest('the import from MariaDB'))('npm run import from a Chat Nio database on MariaDB', () => {
  let server: PrivateMariaDb;
  let database: TestDatabase;
  let gateway: TestGateway;
  let from: string;

  beforeAll(async () => {
    server = await startPrivateMariaDb();
    await createMariaDbDatabase(server, 'chatnio');
    from = server.url('chatnio');
    database = await startTestDatabase();
    gateway = await startTestGateway({}, { database });
  });
  afterAll(async () => {
    await gateway?.stop();
    await database?.stop();
    await server?.stop();
  });

  it('brings users, balances to the last of six decimals, API keys, gifts and conversations across, as the legacy endpoints show them', async () => {
    const run = await runImport(from, database.uri);
    expect(problemsOf(run.stderr)).toEqual(expectedProblems('mariadb'));
    // Rows were left out: the exit code says so.
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toContain(`\nimport: ${expectedProblems('mariadb').length} rows left out, listed above\n`);
    expect(summaryOf(run.stdout)).toEqual(expectedSummary('mariadb', 'written'));
    await expectAsChatNioHasIt(gateway, 'mariadb');
  });

  it('changes nothing when run again, and says that everything is there already', async () => {
    const before = await snapshot(database.uri);
    const run = await runImport(from, database.uri);
    expect(run.code).toBe(1);
    expect(problemsOf(run.stderr)).toEqual(expectedProblems('mariadb'));
    expect(summaryOf(run.stdout)).toEqual(expectedSummary('mariadb', 'there'));
    expect(await snapshot(database.uri)).toEqual(before);
  });

  it('reads each table of text in the order of its key, without sorting it: memory does not grow with the database', async () => {
    const source = await openMysqlSource(from);
    const queries = legacyQueries(source, columnLimits(64 * 1024 * 1024));
    try {
      // quota holds numbers only, one row per user: the optimizer may well sort so few.
      for (const table of LEGACY_TABLES.filter((name) => TABLE_SHAPES[name].text.length > 0)) {
        const plan: unknown[] = [];
        for await (const step of source.rows(`EXPLAIN ${queries.rows(table)}`)) plan.push(step.Extra);
        expect(String(plan.join('; ')), table).not.toContain('filesort');
      }
    } finally {
      await source.close();
    }
  });

  it('alters no text: bytes that are not UTF-8 (in a binary column, or a surrogate in utf8mb4) and a NUL are left out, latin1 is read as latin1', async () => {
    await createHostileMariaDb(server, 'hostile');
    const fresh = await startTestDatabase();
    const second = await startTestGateway({}, { database: fresh });
    try {
      const run = await runImport(server.url('hostile'), fresh.uri, ['--max-data-mib', String(DATA_LIMIT_MIB)]);
      expect(problemsOf(run.stderr)).toEqual(MARIADB_PROBLEMS);
      expect(run.code).toBe(1);
      expect(summaryOf(run.stdout)).toEqual(MARIADB_SUMMARY);
      const users = await second.models.users.find({}, { _id: 0, id: 1, username: 1, balanceMicros: 1 }).lean();
      expect(users).toEqual([{ id: 1, username: 'alice', balanceMicros: 1_500_000 }]);
      const get = async (path: string, authorization: string) =>
        (await fetch(`${second.url}${path}`, { headers: { authorization } })).text();
      expect(await get('/quota', KEYS.ofAlice)).toBe('{"status":true,"quota":1.5}');
      // 0xE9 in a latin1 column is é, as the column says.
      expect(await get('/conversation/list', await second.token(1))).toBe(
        '{"status":true,"message":"","data":[{"id":1,"user_id":1,"name":"café","message":null,"model":"gpt-4o","enable_web":false}]}',
      );
    } finally {
      await second.stop();
      await fresh.stop();
    }
  });

  it('finishes on the next run an import stopped half-way by SIGINT, with every row there once', async () => {
    const fresh = await startTestDatabase();
    const second = await startTestGateway({}, { database: fresh });
    try {
      const first = spawnNode('dist/cli/import.js', ['--from', from, '--batch-size', '100'], { MONGODB_URI: fresh.uri });
      await first.waitFor(/^import: conversation 1\d{3}\/\d+ rows read/m, { stream: 'stderr' });
      first.child.kill('SIGINT');
      const { code } = await first.exited;
      expect(first.stderr()).toMatch(/^import: stopping after the current batch$/m);
      expect(first.stdout()).toMatch(/^stopped before the end: run the same command again to finish$/m);
      expect(code).toBe(1);
      const halfway = summaryOf(first.stdout()).tables.conversation!;
      expect(halfway.read).toBeLessThan(CONVERSATIONS.length);
      expect(await second.models.conversations.countDocuments()).toBe(halfway.written);

      const rest = await runImport(from, fresh.uri);
      expect(problemsOf(rest.stderr)).toEqual(expectedProblems('mariadb'));
      const { conversation } = summaryOf(rest.stdout).tables;
      expect(conversation!.there).toBe(halfway.written);
      expect(conversation!.written + conversation!.there).toBe(expectedSummary('mariadb', 'written').tables.conversation.written);
      await expectAsChatNioHasIt(second, 'mariadb');
    } finally {
      await second.stop();
      await fresh.stop();
    }
  });
});
