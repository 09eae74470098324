import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';

import { MongoClient } from 'mongodb';

import { secretKey, signAccessToken } from '../../src/auth/access-token.js';
import { connectAs, type OperationMessage, type TestSocket } from '../support/websocket.js';
import { failures, type HttpSubscriber, openInBatches, subscribeOverHttp } from './http-subscribers.js';
import {
  type Child,
  type CollectedHeap,
  collectedHeap,
  freePort,
  MEMORY_PROBE,
  startGateway,
  startPeer,
  UNCAPPED_LIVE_CONNECTIONS,
  waitForHttp,
  waitForOutput,
} from './processes.js';
import { atMost, formatTarget, type Target } from './report.js';

/**
 * The subscriptions scenario: a gateway process for each of its three transports (WebSocket,
 * Server-Sent Events, multipart HTTP; caps raised: every connection comes from this one
 * address), and the floor (`servers/live-floor.ts`: the driver's change stream and `ws`, or a
 * bare `node:http` event stream, alone) over WebSocket and over SSE, fed by the same database
 * server as the rest of the benchmark. Each figure is measured on all five, the floor showing
 * what this machine's sockets, and Node's HTTP responses, cost by themselves. The targets are
 * against the WebSocket floor; the SSE floor shows how much of an HTTP stream's distance from it
 * no server on Node's HTTP server can close.
 *
 * - idle: `idleSockets` authenticated connections, each with one subscription (five per user), and
 *   what they cost the server: RSS and V8 heap, per connection.
 * - latency: from the start of a balance write (straight to the database, as any writer) to the
 *   `quota` event at each subscriber, with 1 000 subscribers of one user (every write reaches all
 *   of them) and 1 000 subscribers of 1 000 users (each write reaches one). The gateway's and the
 *   floor's writes alternate, each to users of its own, so that both see the same machine.
 */
export interface SubscriptionReport {
  idle: Record<LiveServerName, IdleFigures>;
  latency: Record<'one_user' | 'many_users', Record<LiveServerName, LatencyFigures>>;
}

/** The gateway over each transport (`gateway` is its WebSocket), and the floor over WebSocket (`floor`) and SSE. */
type LiveServerName = 'gateway' | 'gateway_sse' | 'gateway_multipart' | 'floor' | 'floor_sse';
const LIVE_SERVERS: readonly LiveServerName[] = ['gateway', 'gateway_sse', 'gateway_multipart', 'floor', 'floor_sse'];

/** One subscriber, whatever its transport. */
interface Subscriber {
  next(timeoutMs?: number): Promise<OperationMessage>;
  nextTimed(timeoutMs?: number): Promise<{ message: OperationMessage; receivedAt: number }>;
}
interface IdleFigures {
  sockets: number;
  rss_mb_before: number;
  rss_mb_after: number;
  rss_kb_per_socket: number;
  heap_kb_per_socket: number;
  /** The heap V8 keeps committed, used or not (RSS counts it all). */
  heap_committed_kb_per_socket: number;
}
interface LatencyFigures {
  subscribers: number;
  writes: number;
  events: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
}

/** A server the scenario measures: where it listens, its process, and how it is subscribed to. */
export interface LiveServer {
  base: string;
  /** Started with `MEMORY_PROBE`. */
  child: Child;
  /** Its users are `userOffset + 1` to `userOffset + USERS`. */
  userOffset: number;
  transport: 'websocket' | 'sse' | 'multipart';
}

const USERS = 1_000;
const SUBSCRIBERS = 1_000;
const IDLE_QUERY = 'subscription { conversationEvents { kind number } }';
const QUOTA_QUERY = 'subscription { quota }';

export async function measureSubscriptions(
  databaseUri: string,
  options: { idleSockets: number; writes: number; nodeOptions(name: string): string[]; log(message: string): void },
): Promise<SubscriptionReport> {
  const { log } = options;
  const jwtSecret = randomBytes(24).toString('base64url');
  const client = await MongoClient.connect(databaseUri);
  const users = client.db().collection('users');
  await users.insertMany(
    Array.from({ length: LIVE_SERVERS.length * USERS }, (_, index) => ({
      id: index + 1,
      username: `live-${index + 1}`,
      balanceMicros: 0,
      lastConversationId: 0,
    })),
  );
  const floorPort = await freePort();
  /** A gateway process for each transport, so that one transport's memory is never measured on another's. */
  const gatewayOver = async (transport: LiveServer['transport'], userOffset: number): Promise<LiveServer> => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const child = startGateway(
      `subscriptions gateway (${transport})`,
      { port, uri: databaseUri, jwtSecret, nodeOptions: [...MEMORY_PROBE, ...options.nodeOptions(`subscriptions-${transport}`)] },
      UNCAPPED_LIVE_CONNECTIONS,
    );
    children.push(child);
    return { base, child, userOffset, transport };
  };
  const children: Child[] = [];
  const floorChild = startPeer('live_floor', {
    port: floorPort,
    uri: databaseUri,
    jwtSecret,
    nodeOptions: [...MEMORY_PROBE, ...options.nodeOptions('live_floor')],
  });
  children.push(floorChild);
  const floorBase = `http://127.0.0.1:${floorPort}`;
  const servers: Record<LiveServerName, LiveServer> = {
    gateway: await gatewayOver('websocket', 0),
    gateway_sse: await gatewayOver('sse', USERS),
    gateway_multipart: await gatewayOver('multipart', 2 * USERS),
    floor: {
      base: floorBase,
      child: floorChild,
      userOffset: 3 * USERS,
      transport: 'websocket',
    },
    floor_sse: {
      base: floorBase,
      child: floorChild,
      userOffset: 4 * USERS,
      transport: 'sse',
    },
  };
  const names = LIVE_SERVERS;
  const sockets: TestSocket[] = [];
  const streams: HttpSubscriber[] = [];
  try {
    for (const name of ['gateway', 'gateway_sse', 'gateway_multipart'] as const) {
      await waitForHttp(servers[name].child, `${servers[name].base}/healthz`);
    }
    await waitForOutput(floorChild, /listening/);
    const tokens = await Promise.all(
      Array.from({ length: LIVE_SERVERS.length * USERS }, (_, index) => signAccessToken(secretKey(jwtSecret), index + 1)),
    );
    const subscribe = async (server: LiveServer, authorization: string, query: string): Promise<Subscriber> => {
      if (server.transport !== 'websocket') {
        const stream = await subscribeOverHttp(server.base, server.transport, authorization, query);
        streams.push(stream);
        return stream;
      }
      const socket = await connectAs(server.base, authorization);
      sockets.push(socket);
      return socket.subscribe(query);
    };
    /** Opens `count` connections to `server`, one subscription each; `userOf` numbers the server's users from 1. */
    const open = async (server: LiveServer, count: number, userOf: (index: number) => number, query: string) => {
      const running = await subscriptionsOn(server.base);
      const operations = await openInBatches(count, (index) =>
        subscribe(server, `Bearer ${tokens[server.userOffset + userOf(index) - 1]}`, query),
      );
      await untilRunning(server.base, running + count);
      return operations;
    };
    const closeAll = async () => {
      for (const stream of streams.splice(0)) stream.close();
      await Promise.all(sockets.splice(0).map((socket) => socket.close()));
      for (const base of new Set(names.map((name) => servers[name].base))) await untilRunning(base, 0);
    };

    const idle = {} as SubscriptionReport['idle'];
    for (const name of names) {
      const server = servers[name];
      // A first subscription, opened and closed, loads every code path before the "before" sample.
      await open(server, 1, () => 1, IDLE_QUERY);
      await closeAll();
      const before = await settledMemory(server);
      log(`${name}: opening ${options.idleSockets} idle subscriptions`);
      await open(server, options.idleSockets, (index) => (index % USERS) + 1, IDLE_QUERY);
      const after = await settledMemory(server);
      await closeAll();
      idle[name] = {
        sockets: options.idleSockets,
        rss_mb_before: before.rss / 2 ** 20,
        rss_mb_after: after.rss / 2 ** 20,
        rss_kb_per_socket: (after.rss - before.rss) / 1024 / options.idleSockets,
        heap_kb_per_socket: (after.heap.used - before.heap.used) / 1024 / options.idleSockets,
        heap_committed_kb_per_socket: (after.heap.committed - before.heap.committed) / 1024 / options.idleSockets,
      };
    }

    /** Each write waits for its events before the next one; the servers' writes alternate. */
    const measure = async (
      subscribers: Record<LiveServerName, Subscriber[]>,
      writes: number,
      userOfWrite: (write: number) => number,
      readersOf: (name: LiveServerName, user: number) => Subscriber[],
    ) => {
      const delays = Object.fromEntries(names.map((name) => [name, [] as number[]])) as Record<LiveServerName, number[]>;
      for (const name of names) for (const subscriber of subscribers[name]) await subscriber.next(30_000);
      for (let write = 0; write < writes; write++) {
        for (const name of names) {
          const user = userOfWrite(write);
          const started = performance.now();
          await users.updateOne({ id: servers[name].userOffset + user }, { $inc: { balanceMicros: 1_000_000 } });
          const arrivals = await Promise.all(readersOf(name, user).map((reader) => reader.nextTimed(30_000)));
          for (const { receivedAt } of arrivals) delays[name].push(receivedAt - started);
        }
      }
      return Object.fromEntries(names.map((name) => [name, summarize(subscribers[name].length, writes, delays[name])])) as Record<
        LiveServerName,
        LatencyFigures
      >;
    };
    /** `count` subscribers on every server, opened one server after the other. */
    const openOnEach = async (count: number, userOf: (index: number) => number) => {
      const opened = {} as Record<LiveServerName, Subscriber[]>;
      for (const name of names) opened[name] = await open(servers[name], count, userOf, QUOTA_QUERY);
      return opened;
    };

    log(`latency: ${SUBSCRIBERS} subscribers of one user, ${options.writes} writes each`);
    const ofOne = await openOnEach(SUBSCRIBERS, () => 1);
    const oneUser = await measure(
      ofOne,
      options.writes,
      () => 1,
      (name) => ofOne[name],
    );
    await closeAll();

    log(`latency: ${SUBSCRIBERS} subscribers of ${USERS} users, ${USERS} writes each`);
    const ofMany = await openOnEach(SUBSCRIBERS, (index) => index + 1);
    const manyUsers = await measure(
      ofMany,
      USERS,
      (write) => write + 1,
      (name, user) => [ofMany[name][user - 1]!],
    );
    await closeAll();

    return { idle, latency: { one_user: oneUser, many_users: manyUsers } };
  } finally {
    for (const stream of streams) stream.close();
    for (const socket of sockets) socket.socket.terminate();
    await Promise.all(children.map((child) => child.stop()));
    await client.db().dropDatabase();
    await client.close();
  }
}

/** The running subscriptions the server's /readyz counts. */
export async function subscriptionsOn(base: string): Promise<number> {
  return ((await (await fetch(`${base}/readyz`)).json()) as { subscriptions: number }).subscriptions;
}

/** Waits until the server's /readyz counts `count` running subscriptions. */
export async function untilRunning(base: string, count: number): Promise<void> {
  for (const deadline = Date.now() + 120_000; Date.now() < deadline; await sleep(100)) {
    if ((await subscriptionsOn(base)) === count) return;
  }
  const failed = failures.length === 0 ? '' : `; ${failures.length} HTTP subscriptions failed, first: ${failures[0]}`;
  throw new Error(`${base} did not reach ${count} running subscriptions (it runs ${await subscriptionsOn(base)})${failed}`);
}

/** A server's memory, in bytes: RSS, and its V8 heap (`CollectedHeap`). */
export interface SettledMemory {
  rss: number;
  heap: CollectedHeap;
}

/**
 * RSS and V8 heap once the server is idle and has collected its garbage (`collectedHeap`): the
 * heap as the collection left it, RSS as the median of samples over a few seconds after it.
 */
export async function settledMemory(server: LiveServer): Promise<SettledMemory> {
  await sleep(2_000);
  const heap = await collectedHeap(server.child);
  const rss: number[] = [];
  for (let index = 0; index < 5; index++) {
    await sleep(500);
    rss.push(server.child.rss());
  }
  return { rss: middle(rss), heap };
}

export function summarize(subscribers: number, writes: number, delays: number[]) {
  const sorted = [...delays].sort((a, b) => a - b);
  const at = (fraction: number) => sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))] ?? Number.NaN;
  return { subscribers, writes, events: sorted.length, p50_ms: at(0.5), p99_ms: at(0.99), max_ms: sorted.at(-1) ?? Number.NaN };
}

function middle(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/**
 * The goals of live updates, against the WebSocket floor measured in the same run (what this
 * machine's sockets cost by themselves): an event reaches 1 000 subscribers of one user with a
 * p99 at most 1.2× the floor's, and an idle subscription costs the gateway no more RSS (which
 * holds the heap and everything outside it) than an idle socket of the floor.
 */
export function subscriptionTargets(report: SubscriptionReport): Target[] {
  const { one_user } = report.latency;
  return GATEWAY_TRANSPORTS.flatMap(([name, label]) => [
    atMost(
      `${label}: write to event p99 / the floor's, ${one_user[name].subscribers} subscribers of one user`,
      one_user[name].p99_ms / one_user.floor.p99_ms,
      1.2,
    ),
    atMost(
      `${label}: RSS per idle subscription / the floor's per idle socket`,
      report.idle[name].rss_kb_per_socket / report.idle.floor.rss_kb_per_socket,
      1,
    ),
  ]);
}

/** The gateway's transports, as the report names them. */
const GATEWAY_TRANSPORTS: readonly [LiveServerName, string][] = [
  ['gateway', 'WebSocket'],
  ['gateway_sse', 'SSE'],
  ['gateway_multipart', 'multipart'],
];

/**
 * The ratios the report shows besides the targets: each transport against the WebSocket floor, the
 * SSE floor against it, and the HTTP streams against the SSE floor (what Node's HTTP server costs
 * being the same on both sides).
 */
const COMPARED: readonly [LiveServerName, LiveServerName][] = [
  ['gateway', 'floor'],
  ['gateway_sse', 'floor'],
  ['gateway_multipart', 'floor'],
  ['floor_sse', 'floor'],
  ['gateway_sse', 'floor_sse'],
  ['gateway_multipart', 'floor_sse'],
];

export function formatSubscriptionReport(report: SubscriptionReport): string {
  const { idle, latency } = report;
  const idleRow = (name: LiveServerName) => {
    const figures = idle[name];
    return (
      `  ${name.padEnd(18)} ${figures.sockets} idle authenticated subscriptions: RSS ${figures.rss_mb_before.toFixed(0)} → ` +
      `${figures.rss_mb_after.toFixed(0)} MB, ${figures.rss_kb_per_socket.toFixed(1)} KB RSS and ${figures.heap_kb_per_socket.toFixed(1)} KB of heap in use ` +
      `(${figures.heap_committed_kb_per_socket.toFixed(1)} KB committed) per connection`
    );
  };
  const idleRatios = COMPARED.map(
    ([name, floor]) => `${name} / ${floor} ${(idle[name].rss_kb_per_socket / idle[floor].rss_kb_per_socket).toFixed(2)}`,
  );
  const latencyRow = (name: string, figures: LatencyFigures) =>
    `  ${name.padEnd(52)} ${String(figures.events).padStart(7)} events   p50 ${figures.p50_ms.toFixed(2)} ms   p99 ${figures.p99_ms.toFixed(2)} ms   max ${figures.max_ms.toFixed(1)} ms`;
  const latencyRows = (scenario: string, figures: Record<LiveServerName, LatencyFigures>) => [
    ...LIVE_SERVERS.map((name) => latencyRow(`${name}, ${scenario}`, figures[name])),
    ...COMPARED.map(
      ([name, floor]) =>
        `  ${''.padEnd(52)} ${name} / ${floor}: p50 ${(figures[name].p50_ms / figures[floor].p50_ms).toFixed(2)}, p99 ${(figures[name].p99_ms / figures[floor].p99_ms).toFixed(2)}`,
    ),
  ];
  return [
    'subscriptions (the gateway over WebSocket, SSE and multipart, and the floor over WebSocket and SSE; writes straight to the database):',
    ...LIVE_SERVERS.map(idleRow),
    `  RSS per idle connection: ${idleRatios.join(', ')}`,
    '  write to event at the subscriber:',
    ...latencyRows(`${latency.one_user.gateway.subscribers} subscribers of one user`, latency.one_user),
    ...latencyRows(`${latency.many_users.gateway.subscribers} subscribers of ${USERS} users`, latency.many_users),
    'targets:',
    ...subscriptionTargets(report).map(formatTarget),
  ].join('\n');
}
