import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { MongoClient } from 'mongodb';

import { secretKey, signAccessToken } from '../../src/auth/access-token.js';
import { withDatabaseName } from '../../src/db/uri.js';
import { checkAnswers } from './checks.js';
import { commandsPerRequest } from './commands.js';
import { BENCH_USER_ID, conversationCounts, FULL_DATASET, QUICK_DATASET } from './dataset.js';
import { drive, median, type Sample } from './load.js';
import {
  type Child,
  cpuProfileFlags,
  freePort,
  ROOT,
  startEmbeddedEngine,
  startGateway,
  startPeer,
  waitForHttp,
  waitForOutput,
} from './processes.js';
import { formatReport, jsonReport, ratiosOf, type Report, type ScenarioSummary, targetsOf } from './report.js';
import { formatScaleReport, FULL_SCALE, measureScale, QUICK_SCALE, type ScaleReport, scaleTargets } from './scale.js';
import { type Scenario, SCENARIO_NAMES, scenarios, type Target } from './scenarios.js';
import { seedUsers, smallUserCount } from './seed.js';
import { formatSubscriptionReport, measureSubscriptions, type SubscriptionReport, subscriptionTargets } from './subscriptions.js';

const USAGE = `npm run bench -- [--quick] [--soak SECONDS] [--json FILE] [--rounds N] [--seconds S] [--only a,b] [--profile]

  --quick        1 000 users / 100 000 conversations, 3 shorter rounds (about 5½ minutes, 4 more with the scale scenarios)
  --soak S       seconds of mixed full load for the memory check (default: 60, or 20 with --quick)
  --json FILE    also write the results as JSON
  --rounds N     rounds per scenario (default: 5, or 3 with --quick)
  --seconds S    seconds per scenario and round (default: 10, or 3 with --quick)
  --only a,b     measure only these scenarios (${SCENARIO_NAMES.join(', ')}, subscriptions, scale)
  --profile      run every server with --cpu-prof; profiles land in .bench/profiles/<server>/

MONGODB_URI set: runs on that server, in database chat_gateway_bench (dropped before and after).
Otherwise: runs the embedded engine as a separate process.`;

const BENCH_DATABASE = 'chat_gateway_bench';
/** The subscriptions scenario's own database (1 000 users), dropped after it. */
const LIVE_DATABASE = 'chat_gateway_bench_live';
/** The scale scenarios' own database, dropped after them. */
const SCALE_DATABASE = 'chat_gateway_bench_scale';
/** The `--only` names of the scenarios that are not HTTP load on the main data set. */
const OWN_RUNS = ['subscriptions', 'scale'];
/** Idle subscriptions whose memory is measured, and balance writes for the latency with one user's subscribers. */
const IDLE_SOCKETS = 5_000;
const LIVE_WRITES = 100;
const BENCH_DIRECTORY = join(ROOT, '.bench');

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    soak: { type: 'string' },
    json: { type: 'string' },
    rounds: { type: 'string' },
    seconds: { type: 'string' },
    only: { type: 'string' },
    profile: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (args.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const quick = args.quick;
const dataset = quick ? QUICK_DATASET : FULL_DATASET;
const rounds = Number(args.rounds ?? (quick ? 3 : 5));
const seconds = Number(args.seconds ?? (quick ? 3 : 10));
const soakSeconds = Number(args.soak ?? (quick ? 20 : 60));
const only = args.only?.split(',');
const unknown = only?.filter((name) => ![...SCENARIO_NAMES, ...OWN_RUNS].includes(name)) ?? [];
const measureLive = only === undefined || only.includes('subscriptions');
const measureGrowth = only === undefined || only.includes('scale');
const measureHttp = only === undefined || only.some((name) => !OWN_RUNS.includes(name));
if (![rounds, seconds].every((value) => Number.isInteger(value) && value > 0) || !(soakSeconds >= 0) || unknown.length > 0) {
  process.stderr.write(`${unknown.length > 0 ? `unknown scenario: ${unknown.join(', ')}\n` : ''}${USAGE}\n`);
  process.exit(2);
}

const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);
const megabytes = (bytes: number) => bytes / 1024 / 1024;

/** The peers, each in its own process on the same database and data: `test/bench/servers/<name with dashes>.ts`. */
const PEERS = ['baseline', 'floor', 'express_floor', 'apollo', 'mercurius', 'yoga'] as const satisfies readonly Target[];

/** The database the benchmark runs on: the embedded engine in a process of its own, or MONGODB_URI's server. */
interface Database {
  /** The server's URI, without a database name. */
  server: string;
  /** The URI of the benchmark's database. */
  uri: string;
  /** The embedded engine's process, when it runs one. */
  engine?: Child;
}

/** Every server under test, and where it listens. */
interface Servers {
  bases: Record<Target, string>;
  processes: Record<Target, Child>;
}

async function main(): Promise<void> {
  const loadAtStart = loadavg()[0]!;
  if (!existsSync(join(ROOT, 'dist/main.js'))) throw new Error('dist/ is missing: run `npm run build` (npm run bench does)');
  mkdirSync(BENCH_DIRECTORY, { recursive: true });
  const children: Child[] = [];
  let database: Database | undefined;
  try {
    database = await startDatabase(children);
    let live: SubscriptionReport | undefined;
    if (measureLive) {
      live = await measureSubscriptions(withDatabaseName(database.server, LIVE_DATABASE), {
        idleSockets: IDLE_SOCKETS,
        writes: LIVE_WRITES,
        nodeOptions: profileOptions,
        log,
      });
      process.stdout.write(`\n${formatSubscriptionReport(live)}\n`);
    }
    const liveJson = live && { ...live, targets: subscriptionTargets(live) };
    let scale: ScaleReport | undefined;
    if (measureGrowth) {
      scale = await measureScale(withDatabaseName(database.server, SCALE_DATABASE), {
        sizes: { ...(quick ? QUICK_SCALE : FULL_SCALE), ...(args.rounds !== undefined && { rounds }) },
        engine: database.engine,
        nodeOptions: profileOptions,
        log,
      });
      process.stdout.write(`\n${formatScaleReport(scale)}\n`);
    }
    const scaleJson = scale && { ...scale, targets: scaleTargets(scale) };
    if (!measureHttp) {
      if (args.json) writeFileSync(args.json, `${JSON.stringify({ subscriptions: liveJson, scale: scaleJson }, null, 2)}\n`);
      return;
    }
    const jwtSecret = randomBytes(24).toString('base64url');
    const servers = await startServers(database.uri, jwtSecret, children);
    const report = await measureServers(database, servers, jwtSecret, loadAtStart);
    process.stdout.write(`\n${formatReport(report)}\n`);
    if (live) process.stdout.write(`\n${formatSubscriptionReport(live)}\n`);
    if (scale) process.stdout.write(`\n${formatScaleReport(scale)}\n`);
    if (args.json) {
      writeFileSync(
        args.json,
        `${JSON.stringify({ ...(jsonReport(report) as object), subscriptions: liveJson, scale: scaleJson }, null, 2)}\n`,
      );
      log(`wrote ${args.json}`);
    }
  } finally {
    for (const child of children.reverse()) await child.stop();
    if (process.env.MONGODB_URI && database) await dropDatabase(database.uri);
  }
}

async function startDatabase(children: Child[]): Promise<Database> {
  const external = process.env.MONGODB_URI;
  if (external) {
    const uri = withDatabaseName(external, BENCH_DATABASE);
    await dropDatabase(uri);
    return { server: external, uri };
  }
  const { engine, server } = await startEmbeddedEngine(children);
  return { server, uri: withDatabaseName(server, BENCH_DATABASE), engine };
}

/** With `--profile`, each server process writes its profiles to `.bench/profiles/<name>/` (tsx's loader thread writes one too). */
function profileOptions(name: string): string[] {
  return args.profile ? cpuProfileFlags(name) : [];
}

/** Starts the gateway, which creates the database's indexes, then every peer; returns once all of them listen. */
async function startServers(uri: string, jwtSecret: string, children: Child[]): Promise<Servers> {
  const gatewayPort = await freePort();
  const gateway = startGateway(
    'gateway',
    { port: gatewayPort, uri, jwtSecret, nodeOptions: profileOptions('gateway') },
    { DEPLOYMENT: 'community' },
  );
  children.push(gateway);
  const bases = { gateway: `http://127.0.0.1:${gatewayPort}` } as Record<Target, string>;
  await waitForHttp(gateway, `${bases.gateway}/healthz`);
  const processes = { gateway } as Record<Target, Child>;
  for (const name of PEERS) {
    const port = await freePort();
    bases[name] = `http://127.0.0.1:${port}`;
    processes[name] = startPeer(name, { port, uri, jwtSecret, nodeOptions: profileOptions(name) });
    children.push(processes[name]);
  }
  await Promise.all(PEERS.map((name) => waitForOutput(processes[name], /listening/)));
  return { bases, processes };
}

/** One run of a scenario, with the CPU time its server and the database spent per request. */
type Measure = (scenario: Scenario, duration: number) => Promise<Sample>;

function measurer({ bases, processes }: Servers, engine: Child | undefined): Measure {
  return async (scenario, duration) => {
    const server = processes[scenario.target];
    const cpuBefore = [server.cpuSeconds(), engine?.cpuSeconds() ?? Number.NaN];
    const sample = await drive(bases[scenario.target], scenario, duration);
    const perRequest = (after: number, before: number) => ((after - before) / sample.requests) * 1e6;
    return {
      ...sample,
      server_cpu_us: perRequest(server.cpuSeconds(), cpuBefore[0]!),
      db_cpu_us: perRequest(engine?.cpuSeconds() ?? Number.NaN, cpuBefore[1]!),
    };
  };
}

/**
 * Seeds the 1% data set and measures the REST list on it (the scale target compares the list on
 * it with the full one), seeds the rest, measures every scenario in interleaved rounds, then the
 * gateway's memory over a soak.
 */
async function measureServers(database: Database, servers: Servers, jwtSecret: string, loadAtStart: number): Promise<Report> {
  const { bases, processes } = servers;
  const gateway = processes.gateway;
  let rssMax = 0;
  const sampler = setInterval(() => {
    rssMax = Math.max(rssMax, gateway.rss() || 0);
  }, 250);
  try {
    const counts = conversationCounts(dataset);
    const small = smallUserCount(counts, dataset);
    const client = await MongoClient.connect(database.uri);
    let started = Date.now();
    const smallConversations = await seedUsers(client.db(), counts, 1, small + 1);
    log(`seeded ${small} users and ${smallConversations} conversations in ${((Date.now() - started) / 1000).toFixed(1)} s`);

    const token = await signAccessToken(secretKey(jwtSecret), BENCH_USER_ID);
    const all = scenarios(token).filter((scenario) => only === undefined || only.includes(scenario.name));
    const measure = measurer(servers, database.engine);
    await checkAnswers(scenarios(token), bases);
    log('counting database commands per request (probe gateway in this process)');
    const commands = Object.fromEntries(await commandsPerRequest(database.uri, jwtSecret, all));
    const summaries: Record<string, ScenarioSummary> = {};
    const smallList = await measureSmallList(all, bases, measure);
    if (smallList) summaries.rest_list_small = smallList;

    started = Date.now();
    const rest = await seedUsers(client.db(), counts, small + 1, dataset.users + 1);
    log(`seeded the other ${dataset.users - small} users and ${rest} conversations in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    await client.close();
    await checkAnswers(scenarios(token), bases);
    await warmUp(all, bases);
    Object.assign(summaries, await measureRounds(all, measure));

    log(`soak: ${SOAK_WARM_UP_SECONDS} s of warm-up, then ${soakSeconds} s of mixed load on the gateway`);
    const soaked = await soak(
      gateway,
      bases.gateway,
      all.filter((scenario) => scenario.target === 'gateway'),
    );
    const partial: Omit<Report, 'targets'> = {
      machine: machineOf(
        loadAtStart,
        `${dataset.users} users / ${dataset.conversations} conversations (1%: ${small} / ${smallConversations})`,
      ),
      scenarios: summaries,
      ratios: ratiosOf(summaries),
      commandsPerRequest: commands,
      memory: {
        rss_before_soak_mb: megabytes(soaked.before),
        rss_after_soak_mb: megabytes(soaked.after),
        rss_growth_mb: megabytes(soaked.after - soaked.before),
        rss_max_mb: megabytes(rssMax),
        soak_seconds: soakSeconds,
      },
    };
    return { ...partial, targets: targetsOf(partial, quick) };
  } finally {
    clearInterval(sampler);
  }
}

function machineOf(loadAtStart: number, datasetLine: string): Report['machine'] {
  return {
    cores: availableParallelism(),
    cpu: cpus()[0]?.model.trim() ?? 'unknown',
    node: process.version,
    database: process.env.MONGODB_URI ? 'MongoDB at MONGODB_URI' : 'embedded engine (separate process)',
    dataset: datasetLine,
    loadAverage: { start: loadAtStart, end: loadavg()[0]! },
  };
}

/** The REST list on the 1% data set, after every gateway path is warmed up (so that this side of the ratio does not run colder code). */
async function measureSmallList(
  all: readonly Scenario[],
  bases: Record<Target, string>,
  measure: Measure,
): Promise<ScenarioSummary | undefined> {
  const restList = all.find((scenario) => scenario.name === 'rest_list');
  if (!restList) return undefined;
  await warmUp(
    all.filter((scenario) => scenario.target === 'gateway'),
    bases,
  );
  log(`rest_list on the 1% data set: ${rounds} × ${seconds} s`);
  const samples: Sample[] = [];
  for (let round = 0; round < rounds; round++) samples.push(await measure(restList, seconds));
  return summarize(samples);
}

/** Every scenario in every round, one after the other, so that each round's figures of two scenarios were taken side by side. */
async function measureRounds(all: readonly Scenario[], measure: Measure): Promise<Record<string, ScenarioSummary>> {
  const samples = new Map<string, Sample[]>(all.map((scenario) => [scenario.name, []]));
  for (let round = 0; round < rounds; round++) {
    log(`round ${round + 1} of ${rounds}`);
    // Each round starts one scenario later, so none always runs right after the same neighbour.
    for (let index = 0; index < all.length; index++) {
      const scenario = all[(index + round) % all.length]!;
      samples.get(scenario.name)!.push(await measure(scenario, seconds));
    }
  }
  return Object.fromEntries(all.map((scenario) => [scenario.name, summarize(samples.get(scenario.name)!)]));
}

/** Load before the soak is measured: a gateway that sat idle has had its heap shrunk, and regrows it under load. */
const SOAK_WARM_UP_SECONDS = 15;
/** RSS is sampled this often during the soak. */
const RSS_SAMPLE_MS = 250;

/**
 * Mixed full load on the gateway (its scenarios in turn, 5 s each), after a warm-up.
 * RSS saw-tooths with the garbage collector, so "before" and "after" are the
 * medians of the samples in the first and the last fifth of the soak (at most 10 s each):
 * a leak lifts the whole saw-tooth, a single sample only shows where a cycle was.
 */
async function soak(gateway: Child, base: string, mixed: readonly Scenario[]): Promise<{ before: number; after: number }> {
  const run = async (duration: number) => {
    for (let elapsed = 0, index = 0; elapsed < duration && mixed.length > 0; elapsed += 5, index++) {
      await drive(base, mixed[index % mixed.length]!, Math.min(5, duration - elapsed));
    }
  };
  await run(SOAK_WARM_UP_SECONDS);
  const samples: number[] = [];
  const sampler = setInterval(() => samples.push(gateway.rss()), RSS_SAMPLE_MS);
  await run(soakSeconds);
  clearInterval(sampler);
  const window = Math.max(1, Math.floor(Math.min(samples.length / 5, 10_000 / RSS_SAMPLE_MS)));
  return { before: median(samples.slice(0, window)), after: median(samples.slice(-window)) };
}

/** A short run of each scenario so that every code path is compiled before it is measured. */
async function warmUp(all: readonly Scenario[], bases: Record<Target, string>): Promise<void> {
  for (const scenario of all) await drive(bases[scenario.target], scenario, quick ? 1 : 3);
}

function summarize(samples: readonly Sample[]): ScenarioSummary {
  const rps = samples.map((sample) => sample.rps);
  return {
    rps: median(rps),
    p50_ms: median(samples.map((sample) => sample.p50_ms)),
    p99_ms: median(samples.map((sample) => sample.p99_ms)),
    rps_min: Math.min(...rps),
    rps_max: Math.max(...rps),
    rounds: samples.length,
    per_round: [...samples],
    server_cpu_us: median(samples.map((sample) => sample.server_cpu_us ?? Number.NaN)),
    db_cpu_us: median(samples.map((sample) => sample.db_cpu_us ?? Number.NaN)),
  };
}

async function dropDatabase(uri: string): Promise<void> {
  const client = await MongoClient.connect(uri);
  try {
    await client.db().dropDatabase();
  } finally {
    await client.close();
  }
}

try {
  await main();
} catch (error) {
  process.stderr.write(`[bench] failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  // The child processes are stopped by now; a database client opened before the failure would keep the run waiting forever.
  process.exit(1);
}
