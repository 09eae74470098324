import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { startEmbeddedServer } from '@chat-gateway/embedded-mongodb';
import { type Document, MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { secretKey, signAccessToken } from '../../src/auth/access-token.js';
import { EMBEDDED_DATABASE_NAME } from '../../src/service.js';
import type { SsoStub } from '../../src/sso-stub/stub-server.js';
import { eventually, officialEnvironment, quotaOf, startStub, SUCCESS } from '../billing/official.js';
import { TEST_JWT_SECRET } from '../support/gateway.js';
import { killIfRunning, type NodeProcess, spawnNode } from '../support/node-process.js';
import { seededRandom } from '../support/random.js';

const WRITERS = 16;
const CONVERSATIONS = 24;
const SEED_QUOTA = 10;
const WALLET = 1_000;
/** Points per buy; the stub charges a tenth of them from the wallet. */
const BUY = 10;
const ROUNDS = 3;

/** What one writer (one user) knows: per conversation, what may be stored (the acknowledged state, or its one write in flight). */
interface Writer {
  userId: number;
  token: string;
  /** Per conversation id: the names it may have (undefined: deleted). Several only while a write's answer is unknown. */
  allowed: Map<number, (string | undefined)[]>;
  acknowledgedBuys: number;
}

let stub: SsoStub;
let directory: string;
let running: NodeProcess | undefined;
const random = seededRandom(47);
const answers = new Set<string>();
const acknowledged: string[] = [];

beforeAll(async () => {
  const users = Object.fromEntries(Array.from({ length: WRITERS }, (_, i) => [`writer${i + 1}`, { wallet: WALLET }]));
  stub = await startStub(users);
  directory = await mkdtemp(join(tmpdir(), 'chat-gateway-crash-'));
});

afterAll(async () => {
  await killIfRunning(running);
  await stub?.close();
  if (directory) await rm(directory, { recursive: true, force: true });
});

async function startGateway(extra: Record<string, string> = {}): Promise<string> {
  running = spawnNode(
    'dist/main.js',
    [],
    {
      DATA_DIR: join(directory, 'data'),
      JWT_SECRET: TEST_JWT_SECRET,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      RATE_LIMIT: '0',
      ...officialEnvironment(stub, { SSO_TIMEOUT_MS: '2000', SSO_ATTEMPTS: '1', SETTLEMENT_INTERVAL_MS: '200' }),
      ...extra,
    },
    { cwd: directory },
  );
  const [, url] = (await running.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/, {
    stream: 'stderr',
    timeoutMs: 40_000,
  })) as unknown as [string, string];
  return url;
}

async function post(url: string, token: string, path: string, body?: unknown): Promise<string> {
  const response = await fetch(`${url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: token, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return response.text();
}

/** Writes until its request fails (the gateway was killed): renames, deletes and buys, one at a time. */
async function write(url: string, writer: Writer, round: number, choices: () => number): Promise<void> {
  for (let step = 0; ; step++) {
    const alive = [...writer.allowed].filter(([, names]) => names.length === 1 && names[0] !== undefined).map(([id]) => id);
    const choice = choices();
    try {
      if (choice < 0.3) {
        const before = writer.acknowledgedBuys;
        const answer = await post(url, writer.token, '/buy', { quota: BUY });
        acknowledged.push('buy');
        if (answer === SUCCESS) writer.acknowledgedBuys = before + 1;
        else answers.add(answer);
      } else if (alive.length > 0) {
        const id = alive[Math.floor(choices() * alive.length)]!;
        const current = writer.allowed.get(id)!;
        const next = choice < 0.45 ? undefined : `r${round}-w${writer.userId}-s${step}`;
        writer.allowed.set(id, [...current, next]);
        const answer = await (next === undefined
          ? post(url, writer.token, `/conversation/delete?id=${id}`)
          : post(url, writer.token, '/conversation/rename', { id, name: next }));
        expect(answer, answer).toMatch(/^\{"status":true/);
        writer.allowed.set(id, [next]);
        acknowledged.push(next === undefined ? 'delete' : 'rename');
      }
    } catch {
      return;
    }
  }
}

/** The stored conversations agree with what each writer may have: every acknowledged write, one in-flight write at most. */
async function checkConversations(url: string, writers: Writer[]): Promise<void> {
  for (const writer of writers) {
    const list = JSON.parse(await post(url, writer.token, '/conversation/list')) as {
      status: boolean;
      data: { id: number; name: string }[];
    };
    expect(list.status).toBe(true);
    const stored = new Map(list.data.map(({ id, name }) => [id, name]));
    for (const [id, names] of writer.allowed) {
      const name = stored.get(id);
      expect(names, `user ${writer.userId} conversation ${id}: ${name}`).toContain(name);
      writer.allowed.set(id, [name]);
    }
    expect([...stored.keys()].every((id) => writer.allowed.has(id))).toBe(true);
  }
}

describe('the embedded default killed (SIGKILL) under 16 concurrent writers', () => {
  it('keeps every acknowledged rename, delete and buy across three crashes, with nothing half-written', async () => {
    const seedFile = join(directory, 'seed.json');
    await writeFile(
      seedFile,
      JSON.stringify({
        users: Array.from({ length: WRITERS }, (_, i) => ({ id: i + 1, username: `writer${i + 1}`, quota: SEED_QUOTA })),
        conversations: Array.from({ length: WRITERS * CONVERSATIONS }, (_, i) => ({
          userId: Math.floor(i / CONVERSATIONS) + 1,
          id: (i % CONVERSATIONS) + 1,
          name: `seeded ${i}`,
          model: 'gpt-4o',
          messages: [{ role: 'user', content: `question ${i} `.repeat(20) }],
        })),
      }),
    );
    const key = secretKey(TEST_JWT_SECRET);
    const writers: Writer[] = await Promise.all(
      Array.from({ length: WRITERS }, async (_, i) => ({
        userId: i + 1,
        token: await signAccessToken(key, i + 1),
        allowed: new Map(Array.from({ length: CONVERSATIONS }, (_, c) => [c + 1, [`seeded ${i * CONVERSATIONS + c}`]])),
        acknowledgedBuys: 0,
      })),
    );
    // The seed file is loaded once: loading it again would set the balances back.
    let url = await startGateway({ SEED_FILE: seedFile });
    running!.child.kill('SIGTERM');
    expect((await running!.exited).code).toBe(0);

    for (let round = 1; round <= ROUNDS; round++) {
      url = await startGateway();
      await checkConversations(url, writers);
      const writing = writers.map((writer) => write(url, writer, round, random));
      // Killed at a random moment once this round has written something (the machine may be slow).
      const before = acknowledged.length;
      await eventually(() => (acknowledged.length >= before + 2 * WRITERS ? true : undefined), 60_000, 'writes acknowledged');
      await sleep(Math.floor(random() * 1_500));
      running!.child.kill('SIGKILL');
      await running!.exited;
      await Promise.all(writing);
    }

    url = await startGateway();
    await checkConversations(url, writers);
    // Buys cut off after the provider charged are credited by the settlement: then wallet and balance agree.
    await eventually(
      async () => {
        for (const writer of writers) {
          const charged = ((WALLET - stub.wallet(`writer${writer.userId}`)) * 10) / BUY;
          if ((await quotaOf({ url }, writer.token)) !== SEED_QUOTA + charged * BUY) return undefined;
        }
        return true;
      },
      30_000,
      'every charged buy credited',
    );
    for (const writer of writers) {
      const charged = ((WALLET - stub.wallet(`writer${writer.userId}`)) * 10) / BUY;
      expect(charged).toBeGreaterThanOrEqual(writer.acknowledgedBuys);
      // At most the one buy in flight at each kill was charged without an answer.
      expect(charged - writer.acknowledgedBuys).toBeLessThanOrEqual(ROUNDS);
    }
    expect(
      writers.reduce((sum, writer) => sum + writer.acknowledgedBuys, 0),
      `${[...answers].join()} ${acknowledged.length}`,
    ).toBeGreaterThan(0);
    running!.child.kill('SIGTERM');
    expect((await running!.exited).code).toBe(0);
    running = undefined;

    // What is stored, read straight from the data directory: whole documents, sequences past every id.
    const engine = await startEmbeddedServer({ dataDir: join(directory, 'data') });
    const client = await MongoClient.connect(engine.uri);
    try {
      const db = client.db(EMBEDDED_DATABASE_NAME);
      const conversations = await db.collection<Document>('conversations').find().toArray();
      for (const conversation of conversations) {
        expect(conversation).toMatchObject({
          userId: expect.any(Number),
          id: expect.any(Number),
          name: expect.any(String),
          model: 'gpt-4o',
        });
        expect(conversation.messages).toHaveLength(1);
      }
      const users = await db.collection<Document>('users').find().toArray();
      expect(users).toHaveLength(WRITERS);
      for (const user of users) {
        expect(user.lastConversationId).toBeGreaterThanOrEqual(CONVERSATIONS);
        expect(user.balanceMicros).toBe(1_000_000 * (await quotaAfter(writers, user.id as number)));
        // A buy cut off before the provider charged may still wait for its settlement: its purchase is there.
        for (const order of (user.pendingOrders ?? []) as string[]) {
          expect(await db.collection('purchases').findOne({ orderId: order }), order).toMatchObject({ userId: user.id, quota: BUY });
        }
      }
    } finally {
      await client.close();
      await engine.close();
    }
  }, 240_000);
});

function quotaAfter(writers: Writer[], userId: number): number {
  const charged = ((WALLET - stub.wallet(`writer${userId}`)) * 10) / BUY;
  expect(writers.find((writer) => writer.userId === userId)).toBeDefined();
  return SEED_QUOTA + charged * BUY;
}
