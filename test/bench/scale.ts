import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';

import autocannon, { type Result } from 'autocannon';
import { type Collection, MongoClient } from 'mongodb';

import { secretKey, signAccessToken } from '../../src/auth/access-token.js';
import { conversationDocument, userDocument } from './dataset.js';
import { median, type Sample } from './load.js';
import {
  type Child,
  freePort,
  MEMORY_PROBE,
  startGateway,
  startNode,
  startPeer,
  UNCAPPED_LIVE_CONNECTIONS,
  waitForHttp,
  waitForOutput,
} from './processes.js';
import { atMost, formatTarget, type Ratio, summarizeRatio, type Target } from './report.js';
import { call, type Scenario } from './scenarios.js';
import { seedUsers } from './seed.js';
import type { FleetAnswer, FleetCommand } from './subscriber-fleet.js';
import { type LiveServer, type SettledMemory, settledMemory, subscriptionsOn, summarize, untilRunning } from './subscriptions.js';

/**
 * The scale scenarios: how the cost of a request and of live updates grows with the data, on a
 * database of their own (bulk-seeded through the driver, as the main data set is) and a gateway
 * process of their own, with the WebSocket floor (`servers/live-floor.ts`) for the fan-out.
 *
 * - list: the REST list's CPU per request for a user with `largeList` conversations over a user
 *   with 200 (each answers the newest 100);
 * - load: the REST load's CPU per KiB of body for a conversation of `longConversation` messages
 *   over one of 10;
 * - idle: `sockets` idle WebSocket subscriptions (`quota`, all of one user) on one gateway
 *   instance, and what they add to its RSS; then `writes` balance writes, each an event to all of
 *   them, from the start of the write to its arrival at each subscriber, against the floor with as
 *   many sockets.
 *
 * The REST cases run in interleaved rounds: in each, every case once (a fixed number of requests
 * at 4 connections), the two sides of each ratio next to each other, swapped every other round.
 * Then both servers' subscriptions are opened, each side's sockets in a process of their own
 * (`subscriber-fleet.ts`), and sent `rounds` rounds of writes, the two servers' writes
 * alternating, which goes first swapped every round. A ratio is taken within each round, and
 * reported as its median and range.
 */
export interface ScaleSizes {
  largeList: number;
  longConversation: number;
  sockets: number;
  writes: number;
  rounds: number;
  seconds: number;
}

/** Ten writes a round: a round's p99 over three events was the tail of its slowest one, and moved by a third from round to round. */
export const FULL_SCALE: ScaleSizes = { largeList: 100_000, longConversation: 10_000, sockets: 10_000, writes: 10, rounds: 3, seconds: 4 };
/** `--quick`: a list of 20 000 conversations (100 000 take half a minute to seed), fewer writes, shorter rounds. */
export const QUICK_SCALE: ScaleSizes = { ...FULL_SCALE, largeList: 20_000, writes: 2, rounds: 3, seconds: 2 };

const SMALL_LIST = 200;
const SHORT_CONVERSATION = 10;
/** The users of the scale database. */
const SMALL_LIST_USER = 1;
const LARGE_LIST_USER = 2;
const LOAD_USER = 3;
const GATEWAY_SUBSCRIBER = 4;
const FLOOR_SUBSCRIBER = 5;
const SHORT_ID = 1;
const LONG_ID = 2;
/** The REST cases, as the report names them. */
const CASES = ['list_small', 'list_large', 'load_short', 'load_long'] as const;
type Case = (typeof CASES)[number];
/**
 * Every other round's order: the two sides of each ratio run next to each other, and swap places.
 * A case that follows the long load pays for collecting its garbage (megabytes per answer): a
 * rotated order made the small list follow it in every round, and cost it a third more than the large.
 */
const SWAPPED: readonly Case[] = ['list_large', 'list_small', 'load_long', 'load_short'];
const CASE_CONNECTIONS = 4;
/**
 * How often autocannon samples a run, which ends at the sample after its last answer: at its
 * default of a second, the warm-up's 16 requests took a whole second whatever they cost, so each
 * case was sized at 64 requests, a few 10 ms ticks of CPU time, and a ratio moved by a tick.
 */
const SAMPLE_MS = 10;
/**
 * An instance holds 10 000 connections at once (`HTTP_SERVER_LIMITS.maxConnections`,
 * `src/limits.ts`), its HTTP ones included: the gateway's subscriptions share this many sockets
 * (the first few carry two), leaving room for the scenario's requests to `/readyz`.
 */
const GATEWAY_SOCKETS_AT_MOST = 9_900;
const QUOTA_QUERY = 'subscription { quota }';
/**
 * How long the sockets stay idle before memory is read a second time. V8 keeps the heap it grew
 * while they opened (its young generation at its largest, part-empty old pages) until its memory
 * reducer, a few seconds into an idle spell, gives it back; the second reading shows how much of
 * the first was that reserve rather than what the subscriptions hold.
 */
const IDLE_SPELL_MS = 30_000;

export interface CaseFigures {
  /** Median over the rounds, then each round's. */
  server_cpu_us: number;
  /** The embedded engine's CPU per request, when the benchmark runs it. */
  db_cpu_us: number;
  rps: number;
  /** The body of one answer, in bytes. */
  body_bytes: number;
  per_round: Sample[];
}

/** How much a server's memory grew from before its sockets opened. */
export interface MemoryGrowth {
  rss_growth_mb: number;
  /** The V8 heap's growth after a full collection: in use, and committed (used or not, in RSS). */
  heap_growth_mb: number;
  heap_committed_growth_mb: number;
}

/** The growths once the sockets are all open and idle (first round), and `later`, after `IDLE_SPELL_MS` more of idleness. */
export interface FanOutFigures extends MemoryGrowth {
  sockets: number;
  /** RSS when idle before the sockets were opened and once they are all open and idle. */
  rss_mb_before: number;
  rss_mb_after: number;
  later: MemoryGrowth;
  /** Write-to-event latencies at every subscriber, all rounds together, and each round's p99. */
  events: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  p99_ms_per_round: number[];
}

export interface ScaleReport {
  sizes: ScaleSizes;
  cases: Record<Case, CaseFigures>;
  ratios: {
    list_cpu_large_vs_small: Ratio;
    /** The same for the database's CPU (no goal: it shows whether the engine's read grows with the data). */
    list_db_cpu_large_vs_small: Ratio;
    load_cpu_per_kib_long_vs_short: Ratio;
    fanout_p99_gateway_vs_floor: Ratio;
  };
  fanout: { gateway: FanOutFigures; floor: FanOutFigures };
}

export async function measureScale(
  databaseUri: string,
  options: { sizes: ScaleSizes; engine?: Child; nodeOptions(name: string): string[]; log(message: string): void },
): Promise<ScaleReport> {
  const { sizes, log } = options;
  const jwtSecret = randomBytes(24).toString('base64url');
  const children: Child[] = [];
  const client = await MongoClient.connect(databaseUri);
  const db = client.db();
  try {
    const gatewayPort = await freePort();
    const base = `http://127.0.0.1:${gatewayPort}`;
    // The gateway creates the indexes before anything is seeded, as for the main data set.
    const gateway = startGateway('scale gateway', {
      port: gatewayPort,
      uri: databaseUri,
      jwtSecret,
      nodeOptions: options.nodeOptions('scale-gateway'),
    });
    children.push(gateway);
    // The subscriptions on an instance of their own: its memory and connections are theirs alone.
    const livePort = await freePort();
    const liveBase = `http://127.0.0.1:${livePort}`;
    const liveGateway = startGateway(
      'scale subscriptions gateway',
      { port: livePort, uri: databaseUri, jwtSecret, nodeOptions: [...MEMORY_PROBE, ...options.nodeOptions('scale-subscriptions')] },
      UNCAPPED_LIVE_CONNECTIONS,
    );
    children.push(liveGateway);
    const floorPort = await freePort();
    const floorBase = `http://127.0.0.1:${floorPort}`;
    const floor = startPeer('live_floor', {
      port: floorPort,
      uri: databaseUri,
      jwtSecret,
      nodeOptions: [...MEMORY_PROBE, ...options.nodeOptions('scale-live_floor')],
    });
    children.push(floor);
    await waitForHttp(gateway, `${base}/healthz`);
    await waitForHttp(liveGateway, `${liveBase}/healthz`);
    await waitForOutput(floor, /listening/);

    const started = Date.now();
    await seed(db, sizes);
    log(
      `scale: seeded users of ${SMALL_LIST} and ${sizes.largeList} conversations, conversations of ${SHORT_CONVERSATION} and ${sizes.longConversation} messages in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );

    const token = (userId: number) => signAccessToken(secretKey(jwtSecret), userId);
    const rest = (name: 'rest_list' | 'rest_load', path: string, bearer: string): Scenario => ({
      name,
      target: 'gateway',
      method: 'GET',
      path,
      headers: { authorization: `Bearer ${bearer}` },
    });
    const loadToken = await token(LOAD_USER);
    const scenarios: Record<Case, Scenario> = {
      list_small: rest('rest_list', '/conversation/list', await token(SMALL_LIST_USER)),
      list_large: rest('rest_list', '/conversation/list', await token(LARGE_LIST_USER)),
      load_short: rest('rest_load', `/conversation/load?id=${SHORT_ID}`, loadToken),
      load_long: rest('rest_load', `/conversation/load?id=${LONG_ID}`, loadToken),
    };
    const bodyBytes = await checkScaleAnswers(base, scenarios, sizes);

    const gatewayLive: LiveServer = {
      base: liveBase,
      child: liveGateway,
      userOffset: 0,
      transport: 'websocket',
    };
    const floorLive: LiveServer = {
      base: floorBase,
      child: floor,
      userOffset: 0,
      transport: 'websocket',
    };
    const users = db.collection('users');
    const fleets = { gateway: startFleet('gateway'), floor: startFleet('floor') };
    children.push(fleets.gateway.child, fleets.floor.child);
    const fanOut = {
      gateway: {
        server: gatewayLive,
        user: GATEWAY_SUBSCRIBER,
        token: await token(GATEWAY_SUBSCRIBER),
        sockets: Math.min(sizes.sockets, GATEWAY_SOCKETS_AT_MOST),
      },
      floor: { server: floorLive, user: FLOOR_SUBSCRIBER, token: await token(FLOOR_SUBSCRIBER), sockets: sizes.sockets },
    };
    // Every path of both servers compiled before anything is measured; the memory's "before" after that.
    for (const name of ['gateway', 'floor'] as const) {
      const { server: live, user, token: bearer } = fanOut[name];
      await fleets[name].open(live, bearer, 1, 1);
      await write(users, user, fleets[name]);
      await fleets[name].close(live);
    }
    // Each case sends a fixed number of requests, all answered before its CPU time is read (a
    // timed run would leave a long load's last answers to the next case's figures): `seconds`
    // worth at the rate its warm-up reached, in whole rounds of the connections. That rate counts
    // autocannon's start-up in 16 requests, a third or so of a case's own, so a case lasts less.
    // The two lists send as many requests as each other, so that a run's fixed costs weigh alike on both.
    const amounts = {} as Record<Case, number>;
    for (const pass of [0, 1]) {
      for (const name of CASES) {
        const started = performance.now();
        await send(base, scenarios[name], CASE_CONNECTIONS * 4);
        const rps = (CASE_CONNECTIONS * 4) / ((performance.now() - started) / 1000);
        if (pass === 1)
          amounts[name] = CASE_CONNECTIONS * Math.max(4, Math.min(4_000, Math.round((rps * sizes.seconds) / CASE_CONNECTIONS)));
      }
    }
    amounts.list_small = amounts.list_large = Math.max(amounts.list_small, amounts.list_large);

    const samples = Object.fromEntries(CASES.map((name) => [name, [] as Sample[]])) as Record<Case, Sample[]>;
    const delays = { gateway: [] as number[][], floor: [] as number[][] };
    const memory = {} as Record<'gateway' | 'floor', IdleMemory>;
    for (let round = 0; round < sizes.rounds; round++) {
      log(`scale: round ${round + 1} of ${sizes.rounds}`);
      for (const name of round % 2 === 0 ? CASES : SWAPPED) {
        const before = [gateway.cpuSeconds(), options.engine?.cpuSeconds() ?? Number.NaN] as const;
        const started = performance.now();
        await send(base, scenarios[name], amounts[name]);
        const elapsed = (performance.now() - started) / 1000;
        const perRequest = (after: number, from: number) => ((after - from) / amounts[name]) * 1e6;
        samples[name].push({
          rps: amounts[name] / elapsed,
          p50_ms: Number.NaN,
          p99_ms: Number.NaN,
          requests: amounts[name],
          server_cpu_us: perRequest(gateway.cpuSeconds(), before[0]),
          db_cpu_us: perRequest(options.engine?.cpuSeconds() ?? Number.NaN, before[1]),
        });
      }
    }
    // Each server's sockets are opened once (each server's memory measured before the other's
    // are opened); then every write to one server is followed by one to the other.
    for (const name of ['gateway', 'floor'] as const) {
      const { server: live, token: bearer, sockets: socketCount } = fanOut[name];
      log(`scale: ${sizes.sockets} subscriptions on ${socketCount} sockets of the ${name}`);
      const before = await settledMemory(live);
      await fleets[name].open(live, bearer, sizes.sockets, socketCount);
      const after = await settledMemory(live);
      await sleep(IDLE_SPELL_MS);
      memory[name] = { before, after, later: await settledMemory(live) };
    }
    for (let round = 0; round < sizes.rounds; round++) {
      const order = round % 2 === 0 ? (['gateway', 'floor'] as const) : (['floor', 'gateway'] as const);
      const delaysOfRound = { gateway: [] as number[], floor: [] as number[] };
      for (let at = 0; at < sizes.writes; at++) {
        for (const name of order) delaysOfRound[name].push(...(await write(users, fanOut[name].user, fleets[name])));
      }
      for (const name of order) delays[name].push(delaysOfRound[name]);
    }
    for (const name of ['gateway', 'floor'] as const) await fleets[name].close(fanOut[name].server);

    const cases = Object.fromEntries(CASES.map((name) => [name, caseFigures(samples[name], bodyBytes[name])])) as Record<Case, CaseFigures>;
    return {
      sizes,
      cases,
      ratios: scaleRatios(cases, delays),
      fanout: {
        gateway: fanOutFigures(sizes.sockets, memory.gateway, delays.gateway),
        floor: fanOutFigures(sizes.sockets, memory.floor, delays.floor),
      },
    };
  } finally {
    await Promise.all(children.map((child) => child.stop()));
    await db.dropDatabase();
    await client.close();
  }
}

/**
 * The growth ratios, each round's from that round's figures: CPU per request (the lists), CPU per
 * KiB of body (the loads), and the fan-out's p99 (the gateway's block of writes over the floor's).
 */
export function scaleRatios(
  cases: Record<Case, Pick<CaseFigures, 'per_round' | 'body_bytes'>>,
  delays: { gateway: readonly number[][]; floor: readonly number[][] },
): ScaleReport['ratios'] {
  const rounds = Math.max(0, ...CASES.map((name) => cases[name].per_round.length), delays.gateway.length, delays.floor.length);
  const cpu = (name: Case, round: number) => cases[name].per_round[round]?.server_cpu_us ?? Number.NaN;
  const dbCpu = (name: Case, round: number) => cases[name].per_round[round]?.db_cpu_us ?? Number.NaN;
  const perKib = (name: Case, round: number) => cpu(name, round) / (cases[name].body_bytes / 1024);
  const p99 = (values: readonly number[] | undefined) => (values === undefined ? Number.NaN : summarize(0, 0, [...values]).p99_ms);
  const perRound = (ratio: (round: number) => number) => summarizeRatio(Array.from({ length: rounds }, (_, round) => ratio(round)));
  return {
    list_cpu_large_vs_small: perRound((round) => cpu('list_large', round) / cpu('list_small', round)),
    list_db_cpu_large_vs_small: perRound((round) => dbCpu('list_large', round) / dbCpu('list_small', round)),
    load_cpu_per_kib_long_vs_short: perRound((round) => perKib('load_long', round) / perKib('load_short', round)),
    fanout_p99_gateway_vs_floor: perRound((round) => p99(delays.gateway[round]) / p99(delays.floor[round])),
  };
}

/**
 * Users 1 and 2 with 200 and `largeList` conversations of the main data set's kind, user 3 with
 * one conversation of 10 messages and one of `longConversation`, and the subscribers' users 4 and 5.
 */
async function seed(db: ReturnType<MongoClient['db']>, sizes: ScaleSizes): Promise<void> {
  await seedUsers(db, [SMALL_LIST, sizes.largeList], SMALL_LIST_USER, LARGE_LIST_USER + 1);
  await db
    .collection('users')
    .insertMany([userDocument(LOAD_USER, LONG_ID), userDocument(GATEWAY_SUBSCRIBER, 0), userDocument(FLOOR_SUBSCRIBER, 0)]);
  await db
    .collection('conversations')
    .insertMany([
      conversationDocument(LOAD_USER, SHORT_ID, SHORT_CONVERSATION),
      conversationDocument(LOAD_USER, LONG_ID, sizes.longConversation),
    ]);
}

/** Each case answers 200 with what it should (a page of 100; all the messages); returns each body's size in bytes. */
async function checkScaleAnswers(base: string, scenarios: Record<Case, Scenario>, sizes: ScaleSizes): Promise<Record<Case, number>> {
  const expected: Record<Case, number> = {
    list_small: 100,
    list_large: 100,
    load_short: SHORT_CONVERSATION,
    load_long: sizes.longConversation,
  };
  const bytes = {} as Record<Case, number>;
  for (const name of CASES) {
    const answer = await call(base, scenarios[name]);
    if (answer.status !== 200) throw new Error(`scale ${name} answered ${answer.status}: ${answer.text.slice(0, 300)}`);
    const body = JSON.parse(answer.text) as { data?: unknown };
    const items = itemCount(name, body);
    if (items !== expected[name]) throw new Error(`scale ${name}: ${items} items in the answer, expected ${expected[name]}`);
    bytes[name] = Buffer.byteLength(answer.text);
  }
  return bytes;
}

/** The conversations of a list body, or the messages of a load body. */
function itemCount(name: Case, body: unknown): number {
  const data = (body as { data?: unknown }).data;
  if (name.startsWith('list')) return Array.isArray(data) ? data.length : Number.NaN;
  const messages = (data as { message?: unknown } | undefined)?.message;
  return Array.isArray(messages) ? messages.length : Number.NaN;
}

/**
 * Opens `socketCount` sockets to `server` with `count` `quota` subscriptions among them (one each,
 * the first sockets two when there are more subscriptions than sockets), and takes each one's first
 * event (the balance as it is).
 */
/** One side's subscribers, in a process of their own (`subscriber-fleet.ts`): one command at a time. */
interface Fleet {
  child: Child;
  /** `count` subscriptions on `sockets` sockets of `server`, each past its first event and counted by the server. */
  open(server: LiveServer, bearer: string, count: number, sockets: number): Promise<void>;
  /** Each subscriber's delay from `startedAt` to its next event. */
  collect(startedAt: number): Promise<number[]>;
  /** Closes its sockets, once the server counts none of their subscriptions. */
  close(server: LiveServer): Promise<void>;
}

function startFleet(side: string): Fleet {
  const child = startNode(`${side} subscribers`, ['test/bench/subscriber-fleet.ts'], { nodeOptions: ['--import', 'tsx'], ipc: true });
  const tell = (command: FleetCommand) =>
    new Promise<FleetAnswer>((resolve, reject) => {
      const exited = () => reject(new Error(`${child.name} exited:\n${child.output().slice(-2_000)}`));
      child.process.once('exit', exited);
      child.process.once('message', (reply: FleetAnswer) => {
        child.process.off('exit', exited);
        if ('failed' in reply) reject(new Error(`${child.name}: ${reply.failed}`));
        else resolve(reply);
      });
      child.process.send(command);
    });
  return {
    child,
    async open(server, bearer, count, sockets) {
      const running = await subscriptionsOn(server.base);
      const query = QUOTA_QUERY;
      await tell({ open: { base: server.base, authorization: `Bearer ${bearer}`, count, sockets, query } });
      await untilRunning(server.base, running + count);
    },
    async collect(startedAt) {
      const reply = await tell({ collect: { startedAt } });
      if (!('delays' in reply)) throw new Error(`${child.name}: no delays in its reply`);
      return reply.delays;
    },
    async close(server) {
      await tell({ close: true });
      await untilRunning(server.base, 0);
    },
  };
}

/**
 * Sends `amount` requests of one scenario at `CASE_CONNECTIONS` keep-alive connections; any error or
 * non-2xx answer fails the run. Fewer connections than the other scenarios' 16, and a longer timeout:
 * 16 answers of 2 MiB at once on a busy machine wait for each other past 10 s.
 */
async function send(base: string, scenario: Scenario, amount: number): Promise<void> {
  const result = await new Promise<Result>((resolve, reject) => {
    autocannon(
      {
        url: `${base}${scenario.path}`,
        connections: CASE_CONNECTIONS,
        amount,
        headers: scenario.headers,
        timeout: 60,
        sampleInt: SAMPLE_MS,
      },
      (error, finished) => (error ? reject(error) : resolve(finished)),
    );
  });
  if (result.errors > 0 || result.non2xx > 0) {
    throw new Error(`scale ${scenario.path}: ${result.errors} errors, ${result.non2xx} non-2xx answers of ${amount}`);
  }
}

/** One balance write, straight to the database; the delay from its start to the event at each of the fleet's subscribers. */
async function write(users: Collection, user: number, fleet: Fleet): Promise<number[]> {
  const startedAt = performance.timeOrigin + performance.now();
  await users.updateOne({ id: user }, { $inc: { balanceMicros: 1_000_000 } });
  return fleet.collect(startedAt);
}

function caseFigures(samples: Sample[], bodyBytes: number): CaseFigures {
  return {
    server_cpu_us: median(samples.map((sample) => sample.server_cpu_us ?? Number.NaN)),
    db_cpu_us: median(samples.map((sample) => sample.db_cpu_us ?? Number.NaN)),
    rps: median(samples.map((sample) => sample.rps)),
    body_bytes: bodyBytes,
    per_round: samples,
  };
}

/** A server's memory idle before its sockets open, once they are open, and `IDLE_SPELL_MS` later. */
interface IdleMemory {
  before: SettledMemory;
  after: SettledMemory;
  later: SettledMemory;
}

function fanOutFigures(sockets: number, memory: IdleMemory, rounds: number[][]): FanOutFigures {
  const all = summarize(sockets, 0, rounds.flat());
  const megabytes = (bytes: number) => bytes / 2 ** 20;
  const growth = (to: SettledMemory): MemoryGrowth => ({
    rss_growth_mb: megabytes(to.rss - memory.before.rss),
    heap_growth_mb: megabytes(to.heap.used - memory.before.heap.used),
    heap_committed_growth_mb: megabytes(to.heap.committed - memory.before.heap.committed),
  });
  return {
    sockets,
    rss_mb_before: megabytes(memory.before.rss),
    rss_mb_after: megabytes(memory.after.rss),
    ...growth(memory.after),
    later: growth(memory.later),
    events: all.events,
    p50_ms: all.p50_ms,
    p99_ms: all.p99_ms,
    max_ms: all.max_ms,
    p99_ms_per_round: rounds.map((values) => summarize(0, 0, values).p99_ms),
  };
}

/** The scale goals: ratios judged on their median over the rounds, with their range. */
export function scaleTargets(report: ScaleReport): Target[] {
  const { ratios, fanout, sizes } = report;
  const ratioAtMost = (name: string, ratio: Ratio, goal: number): Target => ({
    ...atMost(name, ratio.median, goal),
    range: { min: ratio.min, max: ratio.max, rounds: ratio.per_round.filter((value) => Number.isFinite(value)).length },
  });
  return [
    ratioAtMost(`scale: REST list CPU/request, ${sizes.largeList} conversations / ${SMALL_LIST}`, ratios.list_cpu_large_vs_small, 1.1),
    ratioAtMost(
      `scale: REST load CPU per KiB, ${sizes.longConversation} messages / ${SHORT_CONVERSATION}`,
      ratios.load_cpu_per_kib_long_vs_short,
      1.2,
    ),
    atMost(`scale: gateway RSS growth with ${sizes.sockets} idle WebSocket subscriptions (MB)`, fanout.gateway.rss_growth_mb, 150),
    ratioAtMost(
      `scale: one event to ${sizes.sockets} WebSocket subscriptions, p99 / the floor's with as many sockets`,
      ratios.fanout_p99_gateway_vs_floor,
      1.2,
    ),
  ];
}

export function formatScaleReport(report: ScaleReport): string {
  const { cases, ratios, fanout, sizes } = report;
  const fixed = (value: number, digits: number) => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');
  const ratioCell = (ratio: Ratio) => `${fixed(ratio.median, 2)} (${fixed(ratio.min, 2)}–${fixed(ratio.max, 2)})`;
  const caseRow = (name: Case) => {
    const figures = cases[name];
    const perKib = figures.server_cpu_us / (figures.body_bytes / 1024);
    return `  ${name.padEnd(11)} ${fixed(figures.rps, 0).padStart(7)} req/s   cpu ${fixed(figures.server_cpu_us, 0).padStart(7)} µs/req (db ${fixed(figures.db_cpu_us, 0).padStart(6)})   body ${fixed(figures.body_bytes / 1024, 1).padStart(8)} KiB   ${fixed(perKib, 1).padStart(7)} µs/KiB`;
  };
  const fanRow = (name: 'gateway' | 'floor') => {
    const figures = fanout[name];
    return (
      `  ${name.padEnd(8)} ${figures.sockets} idle sockets: RSS ${fixed(figures.rss_mb_before, 0)} → ${fixed(figures.rss_mb_after, 0)} MB (+${fixed(figures.rss_growth_mb, 1)} MB, heap +${fixed(figures.heap_growth_mb, 1)} MB in use, +${fixed(figures.heap_committed_growth_mb, 1)} MB committed; ` +
      `${IDLE_SPELL_MS / 1000} s later +${fixed(figures.later.rss_growth_mb, 1)} MB, heap +${fixed(figures.later.heap_growth_mb, 1)} in use, +${fixed(figures.later.heap_committed_growth_mb, 1)} committed); ` +
      `${figures.events} events: p50 ${fixed(figures.p50_ms, 1)} ms, p99 ${fixed(figures.p99_ms, 1)} ms (rounds: ${figures.p99_ms_per_round.map((value) => fixed(value, 1)).join(', ')}), max ${fixed(figures.max_ms, 1)} ms`
    );
  };
  return [
    `scale (${sizes.rounds} interleaved rounds, ${sizes.seconds} s per REST case, ${sizes.writes} writes per round to ${sizes.sockets} subscribers; medians of the rounds):`,
    ...CASES.map(caseRow),
    ...(['gateway', 'floor'] as const).map(fanRow),
    '  growth, each ratio taken within one round: median (min–max)',
    `    REST list CPU/request, ${sizes.largeList} conversations / ${SMALL_LIST}          ${ratioCell(ratios.list_cpu_large_vs_small)}`,
    `    the database's CPU/request for the same lists                    ${ratioCell(ratios.list_db_cpu_large_vs_small)}`,
    `    REST load CPU per KiB, ${sizes.longConversation} messages / ${SHORT_CONVERSATION}                ${ratioCell(ratios.load_cpu_per_kib_long_vs_short)}`,
    `    one event to ${sizes.sockets} subscriptions, p99 gateway / floor   ${ratioCell(ratios.fanout_p99_gateway_vs_floor)}`,
    'targets:',
    ...scaleTargets(report).map(formatTarget),
  ].join('\n');
}
