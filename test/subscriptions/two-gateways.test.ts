import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { secretKey, signAccessToken } from '../../src/auth/access-token.js';
import { withDatabaseName } from '../../src/db/uri.js';
import type { SeedData } from '../../src/seed/seed-file.js';
import type { SsoStub } from '../../src/sso-stub/stub-server.js';
import { buy, officialProcessEnvironment, startStub, SUCCESS } from '../billing/official.js';
import { runCommand } from '../support/command.js';
import { type EmbeddedDbProcess, startEmbeddedDbProcess } from '../support/embedded-db-process.js';
import { graphql, TEST_JWT_SECRET } from '../support/gateway.js';
import { type NodeProcess, spawnNode } from '../support/node-process.js';
import { connectAs, type Operation, type OperationMessage, type TestSocket } from '../support/websocket.js';
import { subscriptionsRunning } from './helpers.js';

/** How late an event may reach a subscriber of the other instance, after the write that caused it returned. */
const WITHIN_MS = 1_000;
const EVENTS = 'subscription { conversationEvents { kind number conversation { name } } }';

interface GatewayProcess {
  process: NodeProcess;
  url: string;
}

/** `node dist/main.js` (what `npm start` runs once built) with `environment`; resolves once it listens. */
async function startGatewayProcess(environment: Record<string, string>): Promise<GatewayProcess> {
  const process = spawnNode('dist/main.js', [], environment);
  const [, url] = (await process.waitFor(/listening on (http:\/\/[\d.:]+)/, { timeoutMs: 30_000, stream: 'stderr' })) as unknown as [
    string,
    string,
  ];
  return { process, url };
}

async function stopProcess(running: GatewayProcess | undefined): Promise<void> {
  if (running === undefined || running.process.child.exitCode !== null || running.process.child.signalCode !== null) return;
  running.process.child.kill('SIGKILL');
  await running.process.exited;
}

const token = (userId: number) => signAccessToken(secretKey(TEST_JWT_SECRET), userId);

/** The next reply, and how long after `since` (performance.now()) it arrived; 0 if it came before. */
async function arrival(operation: Operation, since: number): Promise<{ message: OperationMessage; ms: number }> {
  const { message, receivedAt } = await operation.nextTimed(5_000);
  return { message, ms: Math.max(0, Math.round(receivedAt - since)) };
}

describe('two gateway processes on one embedded-db process', () => {
  let database: EmbeddedDbProcess;
  let stub: SsoStub;
  let first: GatewayProcess;
  let second: GatewayProcess;
  let databaseUri: string;
  let scratch: string;
  const sockets: TestSocket[] = [];

  const seed = async (data: SeedData) => {
    const file = join(scratch, `seed-${Date.now()}.json`);
    await writeFile(file, JSON.stringify(data));
    const result = await runCommand('seed', [file], { MONGODB_URI: databaseUri });
    expect(result.code, result.stderr).toBe(0);
  };

  async function subscribe(gateway: GatewayProcess, userId: number, query: string): Promise<Operation> {
    const socket = await connectAs(gateway.url, `Bearer ${await token(userId)}`);
    sockets.push(socket);
    const before = await subscriptionsRunning(gateway.url);
    const operation = socket.subscribe(query);
    await expect.poll(() => subscriptionsRunning(gateway.url)).toBe(before + 1);
    return operation;
  }

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'chat-gateway-live-'));
    database = await startEmbeddedDbProcess();
    databaseUri = withDatabaseName(database.uri, 'live');
    stub = await startStub({ alice: { wallet: 100 } });
    [first, second] = await Promise.all([
      startGatewayProcess(officialProcessEnvironment(stub, databaseUri, { LOG_LEVEL: 'info' })),
      startGatewayProcess(officialProcessEnvironment(stub, databaseUri)),
    ]);
    await seed({
      users: [
        { id: 1, username: 'alice', quota: 10 },
        { id: 2, username: 'bob', quota: 5 },
      ],
      conversations: [
        { userId: 1, id: 1, name: 'Trip plan', model: 'gpt-4o', enableWeb: false, messages: [] },
        { userId: 1, id: 2, name: 'Recipes', model: 'gpt-4o', enableWeb: false, messages: [] },
        { userId: 2, id: 1, name: 'Bob only', model: 'gpt-4o', enableWeb: false, messages: [] },
      ],
    });
  });
  afterAll(async () => {
    for (const socket of sockets) socket.socket.terminate();
    await Promise.all([stopProcess(first), stopProcess(second)]);
    await stub?.close();
    await database?.stop();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  it("shows a subscriber on one the other's delete and rename, npm run seed's new conversation and a purchase's balance, each within a second", async () => {
    const [, banner] = (await first.process.waitFor(/^ {2}subscriptions +(.*)$/m, { stream: 'stderr' })) as unknown as [string, string];
    expect(banner).toBe(`${first.url.replace(/^http/, 'ws')}/graphql (WebSocket, graphql-transport-ws)`);
    const aliceEvents = await subscribe(first, 1, EVENTS);
    const aliceQuota = await subscribe(first, 1, 'subscription { quota }');
    const bobEvents = await subscribe(first, 2, EVENTS);
    const bobQuota = await subscribe(first, 2, 'subscription { quota }');
    expect((await aliceQuota.next()).payload).toEqual({ data: { quota: 10 } });
    expect((await bobQuota.next()).payload).toEqual({ data: { quota: 5 } });
    const authorization = `Bearer ${await token(1)}`;
    // From the start of each write through the other instance (from the end of `npm run seed`, a process of its own).
    const delays: Record<string, number> = {};

    let started = performance.now();
    const deleted = await graphql(second, 'mutation { deleteConversationByNumber(number: 2) { ok } }', { authorization });
    expect(deleted.body.data).toEqual({ deleteConversationByNumber: { ok: true } });
    let event = await arrival(aliceEvents, started);
    expect(event.message.payload).toEqual({ data: { conversationEvents: { kind: 'DELETED', number: 2, conversation: null } } });
    delays.delete = event.ms;

    await seed({
      users: [{ id: 1, username: 'alice', quota: 10 }],
      conversations: [{ userId: 1, id: 3, name: 'Seeded', model: 'gpt-4o', enableWeb: true, messages: [{ role: 'user', content: 'Hi' }] }],
    });
    event = await arrival(aliceEvents, performance.now());
    expect(event.message.payload).toEqual({
      data: { conversationEvents: { kind: 'CREATED', number: 3, conversation: { name: 'Seeded' } } },
    });
    delays.seed = event.ms;

    started = performance.now();
    const renamed = await graphql(second, 'mutation { renameConversationByNumber(number: 1, name: "Lisbon in May") { ok } }', {
      authorization,
    });
    expect(renamed.body.data).toEqual({ renameConversationByNumber: { ok: true } });
    event = await arrival(aliceEvents, started);
    expect(event.message.payload).toEqual({
      data: { conversationEvents: { kind: 'UPDATED', number: 1, conversation: { name: 'Lisbon in May' } } },
    });
    delays.rename = event.ms;

    started = performance.now();
    expect(await buy(second, authorization, 100)).toEqual({ status: 200, text: SUCCESS });
    event = await arrival(aliceQuota, started);
    expect(event.message.payload).toEqual({ data: { quota: 110 } });
    delays.purchase = event.ms;

    console.info(`events at the other instance's subscriber, from the write (ms): ${JSON.stringify(delays)}`);
    for (const ms of Object.values(delays)) expect(ms).toBeLessThan(WITHIN_MS);
    // Bob saw none of it.
    expect(bobEvents.pending()).toEqual([]);
    expect(bobQuota.pending()).toEqual([]);

    // And Bob's own change reaches Bob alone.
    await graphql(second, 'mutation { renameConversationByNumber(number: 1, name: "Bob renamed") { ok } }', {
      authorization: `Bearer ${await token(2)}`,
    });
    expect((await bobEvents.next()).payload).toEqual({
      data: { conversationEvents: { kind: 'UPDATED', number: 1, conversation: { name: 'Bob renamed' } } },
    });
    expect(aliceEvents.pending()).toEqual([]);
  });

  it('on SIGTERM closes its open subscriptions with 1001 and exits 0, while the other instance serves on', async () => {
    const socket = await connectAs(first.url, `Bearer ${await token(1)}`);
    const quota = socket.subscribe('subscription { quota }');
    expect((await quota.next()).type).toBe('next');
    const others = sockets.filter((open) => open.socket.readyState === open.socket.OPEN);
    expect(others.length).toBeGreaterThan(0);

    first.process.child.kill('SIGTERM');
    expect(await socket.closed).toEqual({ code: 1001, reason: 'server stopping' });
    for (const open of others) expect((await open.closed).code).toBe(1001);
    expect(await first.process.exited).toEqual({ code: 0, signal: null });
    expect(first.process.stdout()).toMatch(/"msg":"stopped"/);

    const onSecond = await connectAs(second.url, `Bearer ${await token(1)}`);
    sockets.push(onSecond);
    expect((await onSecond.subscribe('subscription { quota }').next()).payload).toEqual({ data: { quota: 110 } });
  });
});

describe('a gateway on a standalone MongoDB (no change streams)', () => {
  let database: EmbeddedDbProcess;
  let gateway: GatewayProcess;

  beforeAll(async () => {
    database = await startEmbeddedDbProcess({ standalone: true });
    gateway = await startGatewayProcess({
      MONGODB_URI: withDatabaseName(database.uri, 'standalone'),
      JWT_SECRET: TEST_JWT_SECRET,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
    });
  });
  afterAll(async () => {
    await stopProcess(gateway);
    await database?.stop();
  });

  it('says at start that subscriptions are not available, and why', async () => {
    const [, line] = (await gateway.process.waitFor(/^ {2}subscriptions +(.*)$/m, { stream: 'stderr' })) as unknown as [string, string];
    expect(line).toBe(
      'NOT available: the database is a standalone MongoDB server; change streams need a replica set or a sharded cluster (a one-member replica set will do); everything else works',
    );
  });

  it('answers a subscription with a clear error, and everything else as usual', async () => {
    const authorization = `Bearer ${await token(1)}`;
    const socket = await connectAs(gateway.url, authorization);
    const quota = socket.subscribe('subscription { quota }');
    expect(await quota.next()).toEqual({
      type: 'next',
      payload: {
        errors: [
          {
            message:
              'subscriptions are not available: the database is a standalone MongoDB server; change streams need a replica set or a sharded cluster (a one-member replica set will do)',
            locations: [{ line: 1, column: 16 }],
            path: ['quota'],
            extensions: { code: 'SUBSCRIPTIONS_UNAVAILABLE' },
          },
        ],
      },
    });
    expect((await quota.next()).type).toBe('complete');
    await socket.close();
    const answer = await graphql(gateway, '{ quota conversations { totalCount } }', { authorization });
    expect(answer).toMatchObject({ status: 200, body: { data: { quota: 0, conversations: { totalCount: 0 } } } });
  });
});
