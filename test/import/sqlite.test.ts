import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { MongoClient } from 'mongodb';
import sqlite from 'node-sqlite3-wasm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { columnLimits, LEGACY_TABLES, legacyQueries } from '../../src/import/chat-nio.js';
import { openSqliteSource } from '../../src/import/sqlite-source.js';
import type { SsoStub } from '../../src/sso-stub/stub-server.js';
import { startOfficialGateway, startStub } from '../billing/official.js';
import { startTestDatabase, type TestDatabase } from '../support/database.js';
import type { TestGateway } from '../support/gateway.js';
import { runNode } from '../support/node-process.js';
import { expectAsChatNioHasIt, problemsOf, runImport, summaryOf } from './after-the-move.js';
import { createSqliteDatabase, expectedProblems, expectedSummary } from './chat-nio-database.js';

let directory: string;
let file: string;
let stub: SsoStub;
let database: TestDatabase;
let gateway: TestGateway;

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'chatnio-'));
  file = join(directory, 'chatnio.db');
  createSqliteDatabase(file);
  // The official deployment, where the provider now certifies both users for both gift packages.
  stub = await startStub({ alice: { cert: true, teenager: true }, '李雷🚀': { cert: true, teenager: true } });
  database = await startTestDatabase();
  gateway = await startOfficialGateway(stub, {}, { database });
});
afterAll(async () => {
  await gateway?.stop();
  await database?.stop();
  await stub?.close();
  await rm(directory, { recursive: true, force: true });
});

const rest = async (path: string, userId: number) =>
  (await fetch(`${gateway.url}${path}`, { headers: { authorization: await gateway.token(userId) } })).text();

describe('npm run import from a Chat Nio database on SQLite', () => {
  it('brings everything across as the legacy endpoints show it, each REAL balance rounded to the six decimals it had', async () => {
    const run = await runImport(`sqlite:${file}`, database.uri);
    expect(problemsOf(run.stderr)).toEqual(expectedProblems('sqlite'));
    expect(run.code, run.stderr).toBe(1);
    expect(summaryOf(run.stdout)).toEqual(expectedSummary('sqlite', 'written'));
    // alice's 3.141593 and carol's 0.000001, stored from float32 as 3.1415929794311523 and 9.99999997e-7.
    expect(run.stdout).toContain('\n2 balances stored as REAL had more than six decimals: rounded to six (half to even)\n');
    await expectAsChatNioHasIt(gateway, 'sqlite');
  });

  it('never grants again a gift package Chat Nio granted, and grants one it did not, to the micro-point', async () => {
    // 李雷 had both packages in Chat Nio, alice only cert.
    expect(await rest('/package', 2)).toBe('{"status":true,"data":{"cert":true,"teenager":true}}');
    expect(await rest('/quota', 2)).toBe('{"status":true,"quota":12.5}');
    expect(await rest('/package', 1)).toBe('{"status":true,"data":{"cert":true,"teenager":true}}');
    expect(await rest('/quota', 1)).toBe('{"status":true,"quota":153.141593}');
  });

  it('reads and checks everything in a dry run, lists the same problems, and writes nothing, needing no MONGODB_URI', async () => {
    const run = await runImport(`sqlite:${file}`, undefined, ['--dry-run']);
    expect(problemsOf(run.stderr)).toEqual(expectedProblems('sqlite'));
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('import: from sqlite:');
    expect(run.stdout).toMatch(/^table\s+read\s+would write\s+there already\s+left out$/m);
    expect(summaryOf(run.stdout)).toEqual(expectedSummary('sqlite', 'written'));
  });

  it('leaves out a user whose id or username another user holds here already, with its rows, and says why', async () => {
    const taken = await startTestDatabase();
    try {
      const client = await MongoClient.connect(taken.uri);
      await client
        .db()
        .collection('users')
        .insertMany([
          { id: 4, username: 'zed', balanceMicros: 0, lastConversationId: 0 },
          { id: 50, username: 'dave', balanceMicros: 0, lastConversationId: 0 },
        ]);
      await client.close();
      const run = await runImport(`sqlite:${file}`, taken.uri);
      const problems = problemsOf(run.stderr);
      expect(problems).toContain('auth id=4: user 4 is here already as "zed"');
      expect(problems).toContain('quota user_id=4: its user was left out (see auth)');
      expect(problems).toContain('auth id=5: username "dave" belongs to user 50 here');
      expect(problems).toContain('quota user_id=5: its user was left out (see auth)');
      expect(problems).toHaveLength(expectedProblems('sqlite').length + 4);
    } finally {
      await taken.stop();
    }
  });

  it('reads each table in the order of its key, without sorting it: memory does not grow with the database', async () => {
    const source = await openSqliteSource(file);
    const queries = legacyQueries(source, columnLimits(64 * 1024 * 1024));
    try {
      for (const table of LEGACY_TABLES) {
        const plan: unknown[] = [];
        for await (const step of source.rows(`EXPLAIN QUERY PLAN ${queries.rows(table)}`)) plan.push(step.detail);
        expect(plan.join('; '), table).not.toContain('TEMP B-TREE');
      }
    } finally {
      await source.close();
    }
  });

  it('refuses bad arguments, a missing file and a database that is not Chat Nio’s in one line each, with exit code 2', async () => {
    const notChatNio = join(directory, 'other.db');
    const other = new sqlite.Database(notChatNio);
    other.exec('CREATE TABLE auth (id INTEGER PRIMARY KEY, name TEXT)');
    other.close();
    const text = join(directory, 'notes.txt');
    await writeFile(text, 'not a database at all, but long enough to be read as one by SQLite if it tried hard');
    const cases: [string[], Record<string, string>, string][] = [
      [[], { MONGODB_URI: database.uri }, 'import: --from is required (see --help)\n'],
      [
        ['--from', `sqlite:${file}`],
        {},
        'import: MONGODB_URI is not set: name the database to import into (e.g. one started with npm run embedded-db)\n',
      ],
      [
        ['--from', 'postgres://db/chatnio'],
        { MONGODB_URI: database.uri },
        'import: --from must be mysql://USER:PASSWORD@HOST:PORT/DATABASE or sqlite:PATH, not "postgres://db/chatnio"\n',
      ],
      [
        ['--from', 'mysql://root@localhost'],
        { MONGODB_URI: database.uri },
        'import: --from must name the database: mysql://USER:PASSWORD@HOST:PORT/DATABASE\n',
      ],
      [
        ['--from', `sqlite:${file}`, '--batch-size', '0'],
        { MONGODB_URI: database.uri },
        'import: --batch-size must be a whole number from 1 to 10000, not "0"\n',
      ],
      [
        ['--from', `sqlite:${file}`, '--max-data-mib', '257'],
        { MONGODB_URI: database.uri },
        'import: --max-data-mib must be a whole number from 1 to 256, not "257"\n',
      ],
      [
        ['--from', `sqlite:${directory}/missing.db`],
        { MONGODB_URI: database.uri },
        `import: ${directory}/missing.db: cannot be read (ENOENT)\n`,
      ],
      [
        ['--from', `sqlite:${notChatNio}`],
        { MONGODB_URI: database.uri },
        `import: sqlite:${notChatNio} is not a Chat Nio database: no such column: username\n`,
      ],
      [
        ['--from', `sqlite:${text}`],
        { MONGODB_URI: database.uri },
        `import: sqlite:${text} is not a Chat Nio database: file is not a database\n`,
      ],
    ];
    for (const [args, env, stderr] of cases) {
      const run = await runNode('dist/cli/import.js', args, env);
      expect({ args, code: run.code, stderr: run.stderr }).toEqual({ args, code: 2, stderr });
    }
  });
});
