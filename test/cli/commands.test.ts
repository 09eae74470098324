import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secretKey, verifyAccessToken } from '../../src/auth/access-token.js';
import { runCommand } from '../support/command.js';
import { startTestDatabase, type TestDatabase } from '../support/database.js';

const run = promisify(execFile);
const SECRET = 'command-line-secret-0123456789';

describe('npm run token', () => {
  it('prints a token for the user, signed with JWT_SECRET', async () => {
    const { code, stdout } = await runCommand('token', ['--user', '42'], { JWT_SECRET: SECRET });
    expect(code).toBe(0);
    expect(await verifyAccessToken(secretKey(SECRET), stdout.trim())).toBe(42);
  });

  it('refuses to sign without JWT_SECRET or without a proper user id', async () => {
    const noSecret = await runCommand('token', ['--user', '42']);
    expect(noSecret.code).toBe(1);
    expect(noSecret.stderr).toMatch(/JWT_SECRET/);
    for (const user of ['0', 'abc', '-3']) {
      const bad = await runCommand('token', ['--user', user], { JWT_SECRET: SECRET });
      expect(bad.code).toBe(1);
      expect(bad.stderr).toMatch(/usage/);
    }
  });
});

describe('npm run seed', () => {
  let database: TestDatabase;
  let directory: string;

  beforeAll(async () => {
    database = await startTestDatabase();
    directory = await mkdtemp(join(tmpdir(), 'seed-'));
  });
  afterAll(() => database?.stop());

  it('loads a seed file idempotently and moves each id sequence past the highest id', async () => {
    const file = join(directory, 'seed.json');
    await writeFile(
      file,
      JSON.stringify({
        users: [{ id: 1, username: 'alice', quota: 12.5, apiKeys: ['sk-alice-0123456789abcdef'] }],
        conversations: [
          { userId: 1, id: 3, name: 'Trip plan', model: 'gpt-4o', enableWeb: false, messages: [{ role: 'user', content: 'hi' }] },
          { userId: 1, id: 9, name: 'Later', model: 'gpt-4o', enableWeb: true, messages: [] },
        ],
      }),
    );
    for (let round = 0; round < 2; round += 1) {
      const { code, stdout } = await runCommand('seed', [file], { MONGODB_URI: database.uri });
      expect(code).toBe(0);
      expect(stdout).toMatch(/loaded 1 users and 2 conversations/);
    }
    const client = await MongoClient.connect(database.uri);
    try {
      const db = client.db();
      expect(await db.collection('conversations').countDocuments({ userId: 1 })).toBe(2);
      expect(await db.collection('apiKeys').countDocuments()).toBe(1);
      const user = await db.collection('users').findOne({ id: 1 });
      expect(user).toMatchObject({ username: 'alice', balanceUnits: 125_000, lastConversationId: 9 });
      const key = await db.collection('apiKeys').findOne({});
      expect(JSON.stringify(key)).not.toContain('sk-alice');
    } finally {
      await client.close();
    }
  });

  it('rejects a malformed seed file and names the problem', async () => {
    const file = join(directory, 'bad.json');
    await writeFile(file, JSON.stringify({ users: [{ id: 'one', username: 'x' }] }));
    const { code, stderr } = await runCommand('seed', [file], { MONGODB_URI: database.uri });
    expect(code).toBe(1);
    expect(stderr).toMatch(/seeding failed/);
    expect(stderr).toMatch(/id/);
  });

  it('needs MONGODB_URI', async () => {
    const { code, stderr } = await runCommand('seed', ['x.json']);
    expect(code).toBe(1);
    expect(stderr).toMatch(/MONGODB_URI/);
  });
});

describe('configuration', () => {
  it('stops before listening with one clear line per problem', async () => {
    const { code, stderr } = await run('node', ['dist/main.js'], {
      env: { PATH: process.env.PATH!, DEPLOYMENT: 'official', PORT: 'eighty', JWT_SECRET: 'short' },
      timeout: 20_000,
    }).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => error,
    );
    expect(code).toBe(1);
    expect(stderr).toMatch(/Invalid configuration/);
    for (const name of ['PORT', 'JWT_SECRET', 'SSO_URL', 'SSO_SECRET']) expect(stderr).toMatch(new RegExp(`- ${name} `));
  });
});
