import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { type Db, MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startTestDatabase, type TestDatabase } from '../support/database.js';
import { runNode, spawnNode } from '../support/node-process.js';

let database: TestDatabase;
let client: MongoClient;
let db: Db;
let directory: string;

beforeAll(async () => {
  database = await startTestDatabase();
  client = await MongoClient.connect(database.uri);
  db = client.db();
  directory = await mkdtemp(join(tmpdir(), 'seed-'));
});
afterAll(async () => {
  await client?.close();
  await database?.stop();
});

async function seedFile(name: string, content: unknown): Promise<string> {
  const file = join(directory, name);
  await writeFile(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

const seed = (file: string, env: Record<string, string> = { MONGODB_URI: database.uri }) => runNode('dist/cli/seed.js', [file], env);

/** What the database holds, to show that a refused file changed nothing. */
async function snapshot() {
  const all = (name: string) =>
    db
      .collection(name)
      .find({}, { projection: { _id: 0, createdAt: 0, updatedAt: 0 } })
      .sort({ hash: 1, id: 1, userId: 1 })
      .toArray();
  return { users: await all('users'), apiKeys: await all('apiKeys'), conversations: await all('conversations') };
}

const conversation = (userId: number, id: number, name = `c${id}`) => ({
  userId,
  id,
  name,
  model: 'gpt-4o',
  enableWeb: false,
  messages: [],
});

describe('npm run seed', () => {
  it('loads a seed file idempotently and moves each id sequence past the highest id', async () => {
    const file = await seedFile('seed.json', {
      users: [{ id: 1, username: 'alice', quota: 12.5, apiKeys: ['sk-alice-0123456789abcdef'] }],
      conversations: [
        { userId: 1, id: 3, name: 'Trip plan', model: 'gpt-4o', enableWeb: false, messages: [{ role: 'user', content: 'hi' }] },
        { userId: 1, id: 9, name: 'Later', model: 'gpt-4o', enableWeb: true, messages: [] },
      ],
    });
    for (let round = 0; round < 2; round += 1) {
      const { code, stdout } = await seed(file);
      expect(code).toBe(0);
      expect(stdout).toBe(`loaded 1 users and 2 conversations from ${file}\n`);
    }
    expect(await db.collection('conversations').countDocuments({ userId: 1 })).toBe(2);
    expect(await db.collection('apiKeys').countDocuments()).toBe(1);
    expect(await db.collection('users').findOne({ id: 1 })).toMatchObject({
      username: 'alice',
      balanceMicros: 12_500_000,
      lastConversationId: 9,
    });
    expect(JSON.stringify(await db.collection('apiKeys').findOne({}))).not.toContain('sk-alice');
  });

  it('loads examples/seed.json, the format the README shows', async () => {
    const { code, stdout } = await seed('examples/seed.json');
    expect(code).toBe(0);
    expect(stdout).toMatch(/^loaded 2 users and 3 conversations from examples\/seed\.json\n$/);
  });

  it('checks the whole file first, lists every problem as "path: message" and writes nothing', async () => {
    const before = await snapshot();
    const file = await seedFile('bad.json', {
      users: [
        { id: 50, username: 'erin', quota: 3 },
        { id: 'fifty-one', username: 'frank' },
        { id: 52, username: 'erin', quota: -1, apiKeys: ['sk-alice-0123456789abcdef', 'nope'] },
        { id: 50, username: 'gina', enableWeb: true },
      ],
      conversations: [
        conversation(50, 1),
        { userId: 50, name: 'no id', model: 'gpt-4o' },
        conversation(50, 2_147_483_648),
        conversation(50, 1, 'again'),
        conversation(404, 1),
        { ...conversation(50, 3), messages: [{ role: '', content: 7 }] },
        conversation(50, 4, '🚀'.repeat(257)),
        // Text that could not be stored as given.
        conversation(50, 5, 'nul \u0000 here'),
        { ...conversation(50, 6), model: 'm'.repeat(256), messages: [{ role: 'user', content: 'half of 🚀: \ud83d' }] },
        { ...conversation(50, 7), messages: [{ role: 'user', content: 'nul \u0000 here' }] },
      ],
    });
    const { code, stdout, stderr } = await seed(file);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr.trimEnd().split('\n')).toEqual(
      [
        'users[1].id: must be a number',
        'users[2].quota: must be from 0 to 1000000000',
        'users[2].apiKeys[1]: must start with sk-, be 12 to 4096 characters long and hold only printable ASCII without spaces',
        'users[3]: Unrecognized key: "enableWeb"',
        'conversations[1].id: is required',
        'conversations[2].id: must be an integer from 1 to 2147483647',
        'conversations[5].messages[0].role: must not be empty',
        'conversations[5].messages[0].content: must be a string',
        'conversations[6].name: must be at most 255 characters',
        'conversations[7].name: holds a NUL character',
        'conversations[8].model: must be at most 255 characters',
        'conversations[8].messages[0].content: holds a lone surrogate',
        'conversations[9].messages[0].content: holds a NUL character',
        'users[3].id: user 50 is listed twice (also users[0].id)',
        'users[2].username: "erin" is listed twice (also users[0].username)',
        'conversations[3]: conversation 1 of user 50 is listed twice (also conversations[0])',
        'conversations[4].userId: user 404 is neither in the file nor in the database',
        'users[2].apiKeys[0]: this key belongs to user 1 in the database',
        '18 problems; nothing was written',
      ].map((line) => `seed: ${file}: ${line}`),
    );
    expect(await snapshot()).toEqual(before);
  });

  it('takes names as stored: empty, blank and 255 characters long, as Chat Nio stores them', async () => {
    const names = ['', ' ', '\t \n', '名'.repeat(255), '🚀'.repeat(255)];
    const file = await seedFile('names.json', {
      users: [{ id: 60, username: 'nameless' }],
      conversations: names.map((name, index) => conversation(60, index + 1, name)),
    });
    const { code, stdout, stderr } = await seed(file);
    expect({ code, stdout, stderr }).toEqual({ code: 0, stdout: `loaded 1 users and 5 conversations from ${file}\n`, stderr: '' });
    const stored = await db.collection('conversations').find({ userId: 60 }).sort({ id: 1 }).toArray();
    expect(stored.map((row) => row.name)).toEqual(names);
  });

  it('accepts conversations of a user already in the database, and refuses a username or API key another user holds there', async () => {
    const owned = await seedFile('owned.json', { conversations: [conversation(1, 20, 'for alice, who is in the database')] });
    expect((await seed(owned)).code).toBe(0);
    expect(await db.collection('conversations').findOne({ userId: 1, id: 20 })).toMatchObject({
      name: 'for alice, who is in the database',
    });

    const before = await snapshot();
    const taken = await seedFile('taken.json', { users: [{ id: 77, username: 'alice', apiKeys: ['sk-alice-0123456789abcdef'] }] });
    const { code, stderr } = await seed(taken);
    expect(code).toBe(2);
    expect(stderr).toContain(`seed: ${taken}: users[0].username: "alice" belongs to user 1 in the database\n`);
    expect(stderr).toContain(`seed: ${taken}: users[0].apiKeys[0]: this key belongs to user 1 in the database\n`);
    expect(await snapshot()).toEqual(before);
  });

  it('names the file, the line and the column of a JSON syntax error, in one line', async () => {
    const cases = [
      // A trailing comma in an object, and in an array, whose text JSON.parse quotes, newlines and all, without a position.
      ['{\n  "users": [\n    { "id": 1, }\n  ]\n}\n', 'expected a property name in double quotes (line 3, column 16)'],
      ['{\n  "users": [\n    { "id": 1 },\n  ],\n  "conversations": []\n}\n', 'expected a value (line 4, column 3)'],
      // Cut short: JSON.parse names no position at all.
      ['{\n  "users": [\n    { "id": 1 }\n', "unexpected end of input: expected ',' or ']' (line 4, column 1)"],
      ['', 'unexpected end of input: expected a value (line 1, column 1)'],
      ['{ "users": [], "conversations": [] } trailing', 'unexpected character (line 1, column 38)'],
    ];
    for (const [text, problem] of cases) {
      const file = await seedFile('broken.json', text);
      const { code, stdout, stderr } = await seed(file);
      expect({ code, stdout, stderr }).toEqual({ code: 2, stdout: '', stderr: `seed: ${file}: not valid JSON: ${problem}\n` });
    }
    const missing = await seed(join(directory, 'missing.json'));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe(`seed: ${join(directory, 'missing.json')}: cannot be read (ENOENT)\n`);
  });

  it('reports progress with a rate on stderr every 2000 records of a large file', async () => {
    const file = await seedFile('large.json', {
      users: [{ id: 900, username: 'prolific' }],
      conversations: Array.from({ length: 4_500 }, (_, index) => conversation(900, index + 1)),
    });
    const { code, stderr } = await seed(file);
    expect(code).toBe(0);
    expect(stderr).toMatch(/^seed: 2001\/4501 records written \(\d+\/s\)\nseed: 4001\/4501 records written \(\d+\/s\)\n$/);
    expect(await db.collection('conversations').countDocuments({ userId: 900 })).toBe(4_500);
  });

  it('is refused the same way by a gateway started with it as SEED_FILE, which does not start', async () => {
    // The newcomer's file: a conversation for a user missing from the file, and an id beyond GraphQL's Int.
    const file = await seedFile('half.json', {
      users: [{ id: 61, username: 'henry' }],
      conversations: [conversation(61, 1), conversation(62, 1), conversation(61, 2_147_483_648)],
    });
    const fromSeed = await seed(file);
    const fromGateway = await runNode('dist/main.js', [], { SEED_FILE: file, PORT: '0', HOST: '127.0.0.1' });
    expect(fromGateway.code).toBe(2);
    expect(fromGateway.stdout).toBe('');
    expect(fromGateway.stderr).toBe(fromSeed.stderr.replaceAll(/^seed: /gm, 'chat-gateway: '));
    expect(fromSeed.stderr).toBe(
      [
        'conversations[2].id: must be an integer from 1 to 2147483647',
        'conversations[1].userId: user 62 is neither in the file nor in the database',
        '2 problems; nothing was written',
      ]
        .map((line) => `seed: ${file}: ${line}\n`)
        .join(''),
    );
    expect(await db.collection('users').countDocuments({ id: 61 })).toBe(0);
  });

  it('replaces the demo data when a gateway starts with it, so no token for a demo user is offered', async () => {
    const gateway = spawnNode('dist/main.js', [], { SEED_FILE: 'examples/seed.json', PORT: '0', HOST: '127.0.0.1' });
    try {
      const [logLine] = await gateway.waitFor(/^\{.*"msg":"listening".*\}$/m);
      expect(JSON.parse(logLine).demoToken).toBeUndefined();
      await gateway.waitFor(/set JWT_SECRET to sign your own/, { stream: 'stderr' });
      expect(gateway.stderr()).not.toMatch(/demo user|eyJ/);
      expect(gateway.stdout()).toMatch(/"users":2,"conversations":3,"msg":"seed file loaded"/);
    } finally {
      gateway.child.kill('SIGTERM');
      await gateway.exited;
    }
  });

  it('needs MONGODB_URI: one line, exit code 2', async () => {
    const { code, stderr } = await seed('x.json', {});
    expect(code).toBe(2);
    expect(stderr).toBe('seed: MONGODB_URI is not set: name the database to seed (e.g. one started with npm run embedded-db)\n');
  });
});
