import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';

import { MongoClient } from 'mongodb';

import { secretKey, signAccessToken } from '../../src/auth/access-token.js';
import { sample } from '../support/metrics.js';
import { connectAs, type Operation, type TestSocket } from '../support/websocket.js';
import { type Child, freePort, startNode, waitForHttp } from './processes.js';
import { atMost, formatTarget, type Target } from './report.js';

/**
 * The subscriptions scenario: a gateway of its own (caps raised: every socket comes from this
 * one address), fed by the same database server as the rest of the benchmark.
 *
 * - idle: `idleSockets` authenticated sockets, each with one `conversationEvents` subscription
 *   (five per user), and what they cost the gateway: RSS and V8 heap, per socket.
 * - latency: from the start of a balance write (straight to the database, as any writer) to the
 *   `quota` event at each subscriber, with 1 000 subscribers of one user (every write reaches all
 *   of them) and 1 000 subscribers of 1 000 users (each write reaches one).
 */
export interface SubscriptionReport {
  idle: { sockets: number; rss_mb_before: number; rss_mb_after: number; rss_kb_per_socket: number; heap_kb_per_socket: number };
  latency: Record<
    'one_user' | 'many_users',
    { subscribers: number; writes: number; events: number; p50_ms: number; p99_ms: number; max_ms: number }
  >;
}

const USERS = 1_000;
const SUBSCRIBERS = 1_000;
const METRICS_TOKEN = 'bench-metrics-token-0123456789';
/** Sockets opened at once while connecting thousands. */
const OPENING_IN_PARALLEL = 100;

export async function measureSubscriptions(
  databaseUri: string,
  options: { idleSockets: number; writes: number; log(message: string): void },
): Promise<SubscriptionReport> {
  const { log } = options;
  const jwtSecret = randomBytes(24).toString('base64url');
  const client = await MongoClient.connect(databaseUri);
  const users = client.db().collection('users');
  await users.insertMany(
    Array.from({ length: USERS }, (_, index) => ({
      id: index + 1,
      username: `live-${index + 1}`,
      balanceMicros: 0,
      lastConversationId: 0,
    })),
  );
  const port = await freePort();
  const gateway = startNode('subscriptions gateway', ['dist/main.js'], {
    env: {
      NODE_ENV: 'production',
      RATE_LIMIT: '0',
      LOG_LEVEL: 'warn',
      MONGODB_URI: databaseUri,
      JWT_SECRET: jwtSecret,
      METRICS_TOKEN,
      PORT: String(port),
      HOST: '127.0.0.1',
      SUBSCRIPTIONS_PER_CALLER: '1000000',
      WEBSOCKETS_PER_ADDRESS: '1000000',
      SEED_FILE: '',
    },
  });
  const base = `http://127.0.0.1:${port}`;
  const sockets: TestSocket[] = [];
  try {
    await waitForHttp(gateway, `${base}/healthz`);
    const tokens = await Promise.all(Array.from({ length: USERS }, (_, index) => signAccessToken(secretKey(jwtSecret), index + 1)));
    const open = async (count: number, userOf: (index: number) => number, query: string): Promise<Operation[]> => {
      const operations: Operation[] = [];
      for (let at = 0; at < count; at += OPENING_IN_PARALLEL) {
        const batch = await Promise.all(
          Array.from({ length: Math.min(OPENING_IN_PARALLEL, count - at) }, async (_, offset) => {
            const socket = await connectAs(base, `Bearer ${tokens[userOf(at + offset) - 1]}`);
            sockets.push(socket);
            return socket.subscribe(query);
          }),
        );
        operations.push(...batch);
      }
      return operations;
    };
    const closeAll = async () => {
      await Promise.all(sockets.splice(0).map((socket) => socket.close()));
      await untilRunning(base, 0);
    };

    // Idle sockets. A first subscription, opened and closed, loads every code path before the "before" sample.
    await open(1, () => 1, 'subscription { conversationEvents { kind number } }');
    await untilRunning(base, 1);
    await closeAll();
    const before = await settledMemory(gateway, base);
    log(`opening ${options.idleSockets} idle subscriptions`);
    await open(options.idleSockets, (index) => (index % USERS) + 1, 'subscription { conversationEvents { kind number } }');
    await untilRunning(base, options.idleSockets);
    const after = await settledMemory(gateway, base);
    await closeAll();
    const idle = {
      sockets: options.idleSockets,
      rss_mb_before: before.rss / 2 ** 20,
      rss_mb_after: after.rss / 2 ** 20,
      rss_kb_per_socket: (after.rss - before.rss) / 1024 / options.idleSockets,
      heap_kb_per_socket: (after.heap - before.heap) / 1024 / options.idleSockets,
    };

    // Latency: each write waits for its events before the next one.
    const measure = async (
      subscribers: Operation[],
      writes: number,
      userOfWrite: (write: number) => number,
      readersOf: (user: number) => Operation[],
    ) => {
      for (const subscriber of subscribers) await subscriber.next(30_000);
      const delays: number[] = [];
      for (let write = 0; write < writes; write++) {
        const user = userOfWrite(write);
        const started = performance.now();
        await users.updateOne({ id: user }, { $inc: { balanceMicros: 1_000_000 } });
        const arrivals = await Promise.all(readersOf(user).map((reader) => reader.nextTimed(30_000)));
        for (const { receivedAt } of arrivals) delays.push(receivedAt - started);
      }
      return summarize(subscribers.length, writes, delays);
    };

    log(`latency: ${SUBSCRIBERS} subscribers of one user, ${options.writes} writes`);
    const ofOne = await open(SUBSCRIBERS, () => 1, 'subscription { quota }');
    await untilRunning(base, SUBSCRIBERS);
    const oneUser = await measure(
      ofOne,
      options.writes,
      () => 1,
      () => ofOne,
    );
    await closeAll();

    log(`latency: ${SUBSCRIBERS} subscribers of ${USERS} users, ${USERS} writes`);
    const ofMany = await open(SUBSCRIBERS, (index) => index + 1, 'subscription { quota }');
    await untilRunning(base, SUBSCRIBERS);
    const manyUsers = await measure(
      ofMany,
      USERS,
      (write) => write + 1,
      (user) => [ofMany[user - 1]!],
    );
    await closeAll();

    return { idle, latency: { one_user: oneUser, many_users: manyUsers } };
  } finally {
    for (const socket of sockets) socket.socket.terminate();
    await gateway.stop();
    await client.db().dropDatabase();
    await client.close();
  }
}

/** Waits until the gateway's /readyz counts `count` running subscriptions. */
async function untilRunning(base: string, count: number): Promise<void> {
  for (const deadline = Date.now() + 120_000; Date.now() < deadline; await sleep(100)) {
    const readiness = (await (await fetch(`${base}/readyz`)).json()) as { subscriptions: number };
    if (readiness.subscriptions === count) return;
  }
  throw new Error(`the gateway did not reach ${count} running subscriptions`);
}

/** RSS and V8 heap in use, as medians of samples over a few seconds once the gateway is idle. */
async function settledMemory(gateway: Child, base: string): Promise<{ rss: number; heap: number }> {
  await sleep(2_000);
  const rss: number[] = [];
  const heap: number[] = [];
  for (let index = 0; index < 5; index++) {
    rss.push(gateway.rss());
    const metrics = await (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
    heap.push(sample(metrics, 'nodejs_heap_size_used_bytes'));
    await sleep(500);
  }
  return { rss: middle(rss), heap: middle(heap) };
}

function summarize(subscribers: number, writes: number, delays: number[]) {
  const sorted = [...delays].sort((a, b) => a - b);
  const at = (fraction: number) => sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))] ?? Number.NaN;
  return { subscribers, writes, events: sorted.length, p50_ms: at(0.5), p99_ms: at(0.99), max_ms: sorted.at(-1) ?? Number.NaN };
}

function middle(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/**
 * The goals of live updates: an event reaches every one of 1 000 subscribers of one user within
 * 10 ms of the write (p99), and an idle subscribed socket costs the gateway at most 10 KB (of RSS,
 * which holds the heap and everything outside it).
 */
export function subscriptionTargets(report: SubscriptionReport): Target[] {
  return [
    atMost(`write to event p99, ${report.latency.one_user.subscribers} subscribers of one user (ms)`, report.latency.one_user.p99_ms, 10),
    atMost('RSS per idle subscribed socket (KB)', report.idle.rss_kb_per_socket, 10),
  ];
}

export function formatSubscriptionReport(report: SubscriptionReport): string {
  const { idle, latency } = report;
  const row = (name: string, figures: SubscriptionReport['latency']['one_user']) =>
    `  ${name.padEnd(34)} ${String(figures.events).padStart(7)} events   p50 ${figures.p50_ms.toFixed(2)} ms   p99 ${figures.p99_ms.toFixed(2)} ms   max ${figures.max_ms.toFixed(1)} ms`;
  return [
    'subscriptions (a gateway of their own, writes straight to the database):',
    `  ${idle.sockets} idle authenticated subscriptions: RSS ${idle.rss_mb_before.toFixed(0)} → ${idle.rss_mb_after.toFixed(0)} MB, ` +
      `${idle.rss_kb_per_socket.toFixed(1)} KB RSS and ${idle.heap_kb_per_socket.toFixed(1)} KB of heap per socket`,
    '  write to event at the subscriber:',
    row(`${latency.one_user.subscribers} subscribers of one user`, latency.one_user),
    row(`${latency.many_users.subscribers} subscribers of ${USERS} users`, latency.many_users),
    'targets:',
    ...subscriptionTargets(report).map(formatTarget),
  ].join('\n');
}
