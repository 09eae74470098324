import { randomBytes } from 'node:crypto';
import { mkdirSync, renameSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

import { MongoClient } from 'mongodb';

import { secretKey, signAccessToken } from '../../src/auth/access-token.js';
import { withDatabaseName } from '../../src/db/uri.js';
import { BENCH_USER_ID, conversationCounts, QUICK_DATASET } from './dataset.js';
import { median, send } from './load.js';
import { askProbe, type Child, freePort, startEmbeddedEngine, startGateway, startPeer, waitForHttp, waitForOutput } from './processes.js';
import { type Scenario, SCENARIO_NAMES, type ScenarioName, scenarios } from './scenarios.js';
import { seedUsers, smallUserCount } from './seed.js';

const DEFAULT_SCENARIOS: readonly ScenarioName[] = [
  'rest_load',
  'rest_list',
  'graphql_load',
  'graphql_list',
  'floor_load',
  'floor_list',
  'baseline_load',
  'baseline_list',
];
const USAGE = `npx tsx test/bench/allocations.ts [--requests N] [--rounds N] [--only a,b] [--profile DIR [--survivors]]

Bytes allocated on the V8 heap per request, what of them survived young-generation collections,
and garbage collections per 10 000 requests, of the gateway and its peers (each in its own process,
as the benchmark runs them, on the embedded engine with the quick data set's first users).
Allocations do not depend on the machine's load, so these figures compare two commits even on a
busy machine, where CPU time does not.

  --requests N   requests per measurement (default 10 000), after as many to warm up
  --rounds N     measurements per scenario (default 3); the median and the range are printed
  --only a,b     these scenarios (default: ${DEFAULT_SCENARIOS.join(', ')})
  --profile DIR  instead of the figures, a sampling heap profile of each scenario's requests,
                 written to DIR/<scenario>.heapprofile (summarise with
                 test/bench/heap-profile-summary.ts)
  --survivors    with --profile: only what outlived the scavenges (was promoted), by where it
                 was allocated`;

const PROBE = ['--import', './test/bench/allocation-probe.mjs'];

const { values: args } = parseArgs({
  options: {
    requests: { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '3' },
    only: { type: 'string' },
    profile: { type: 'string' },
    survivors: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (args.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const requests = Number(args.requests);
const rounds = Number(args.rounds);
const names = (args.only?.split(',') ?? DEFAULT_SCENARIOS) as ScenarioName[];
const unknown = names.filter((name) => !SCENARIO_NAMES.includes(name));
if (!Number.isInteger(requests) || requests <= 0 || !Number.isInteger(rounds) || rounds <= 0 || unknown.length > 0) {
  process.stderr.write(`${unknown.length > 0 ? `unknown scenario: ${unknown.join(', ')}\n` : ''}${USAGE}\n`);
  process.exit(2);
}
const log = (message: string) => process.stderr.write(`[allocations] ${message}\n`);

/** What the probe reports at a mark: totals since the process started. */
interface ProbeTotals {
  allocatedBytes: number;
  scavenges: number;
  markCompacts: number;
  pauseMicros: number;
  survivedBytes: number;
  promotedBytes: number;
  /** With ALLOCATION_PROFILE: the profile of the allocations since the last mark. */
  profile?: string;
}

/** A server under measurement, with the probe loaded: `mark()` answers its totals now. */
interface Probed {
  child: Child;
  base: string;
  mark(): Promise<ProbeTotals>;
}

function probed(child: Child, base: string): Probed {
  return { child, base, mark: () => askProbe<ProbeTotals>(child, 'allocation-probe') };
}

interface Measurement {
  bytesPerRequest: number;
  scavengesPer10k: number;
  markCompactsPer10k: number;
  gcMicrosPerRequest: number;
  survivedBytesPerRequest: number;
  promotedBytesPerRequest: number;
}

async function measure(server: Probed, scenario: Scenario): Promise<Measurement> {
  const before = await server.mark();
  await send(server.base, scenario, requests);
  const after = await server.mark();
  const per = (field: 'allocatedBytes' | 'scavenges' | 'markCompacts' | 'pauseMicros' | 'survivedBytes' | 'promotedBytes') =>
    (after[field] - before[field]) / requests;
  return {
    bytesPerRequest: per('allocatedBytes'),
    scavengesPer10k: per('scavenges') * 10_000,
    markCompactsPer10k: per('markCompacts') * 10_000,
    gcMicrosPerRequest: per('pauseMicros'),
    survivedBytesPerRequest: per('survivedBytes'),
    promotedBytesPerRequest: per('promotedBytes'),
  };
}

async function main(): Promise<void> {
  const children: Child[] = [];
  try {
    const { server } = await startEmbeddedEngine(children);
    const uri = withDatabaseName(server, 'chat_gateway_allocations');
    const jwtSecret = randomBytes(24).toString('base64url');
    const profiling: Record<string, string> =
      args.profile === undefined
        ? {}
        : { ALLOCATION_PROFILE: resolve(args.profile), ...(args.survivors && { ALLOCATION_PROFILE_SURVIVORS: '1' }) };
    if (args.profile !== undefined) mkdirSync(args.profile, { recursive: true });

    const servers = new Map<string, Probed>();
    const gatewayPort = await freePort();
    const gateway = startGateway('gateway', { port: gatewayPort, uri, jwtSecret, nodeOptions: PROBE }, profiling);
    children.push(gateway);
    const gatewayBase = `http://127.0.0.1:${gatewayPort}`;
    await waitForHttp(gateway, `${gatewayBase}/healthz`);
    servers.set('gateway', probed(gateway, gatewayBase));

    // The gateway has built the indexes; the bench user and the few after it are enough for these reads.
    const counts = conversationCounts(QUICK_DATASET);
    const client = await MongoClient.connect(uri);
    await seedUsers(client.db(), counts, 1, smallUserCount(counts, QUICK_DATASET) + 1);
    await client.close();

    const all = scenarios(await signAccessToken(secretKey(jwtSecret), BENCH_USER_ID)).filter((scenario) => names.includes(scenario.name));
    for (const target of new Set(all.map((scenario) => scenario.target))) {
      if (servers.has(target)) continue;
      const port = await freePort();
      const peer = startPeer(target, { port, uri, jwtSecret, nodeOptions: PROBE }, profiling);
      children.push(peer);
      await waitForOutput(peer, /listening/);
      servers.set(target, probed(peer, `http://127.0.0.1:${port}`));
    }

    for (const scenario of all) await send(servers.get(scenario.target)!.base, scenario, requests);
    if (args.profile === undefined) process.stdout.write(`\n${table(await measureRounds(all, servers))}\n`);
    else for (const scenario of all) await profile(scenario, servers.get(scenario.target)!, args.profile);
  } finally {
    for (const child of children.reverse()) await child.stop();
  }
}

async function measureRounds(all: readonly Scenario[], servers: Map<string, Probed>): Promise<Map<string, Measurement[]>> {
  const results = new Map<string, Measurement[]>(all.map((scenario) => [scenario.name, []]));
  for (let round = 0; round < rounds; round++) {
    log(`round ${round + 1} of ${rounds}`);
    for (const scenario of all) results.get(scenario.name)!.push(await measure(servers.get(scenario.target)!, scenario));
  }
  return results;
}

/** Where a scenario's allocations come from, as a heap profile: the probe writes one per interval between marks. */
async function profile(scenario: Scenario, server: Probed, directory: string): Promise<void> {
  await server.mark();
  await send(server.base, scenario, requests);
  const written = (await server.mark()).profile;
  if (written === undefined) throw new Error('the probe wrote no profile');
  const file = join(directory, `${scenario.name}.heapprofile`);
  renameSync(written, file);
  log(`${scenario.name}: ${file}`);
}

function table(results: Map<string, Measurement[]>): string {
  const rows = [
    '| scenario | bytes allocated per request: median (min–max) | bytes surviving scavenges per request | of which promoted | scavenges per 10 000 requests | mark-compacts per 10 000 | GC pause µs per request |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const [name, measurements] of results) {
    const column = (field: keyof Measurement, digits: number) => {
      const values = measurements.map((measurement) => measurement[field]);
      const show = (value: number) => value.toFixed(digits);
      return `${show(median(values))} (${show(Math.min(...values))}–${show(Math.max(...values))})`;
    };
    rows.push(
      `| ${name} | ${column('bytesPerRequest', 0)} | ${column('survivedBytesPerRequest', 0)} | ${column('promotedBytesPerRequest', 0)} | ${column('scavengesPer10k', 1)} | ${column('markCompactsPer10k', 1)} | ${column('gcMicrosPerRequest', 1)} |`,
    );
  }
  return rows.join('\n');
}

try {
  await main();
} catch (error) {
  process.stderr.write(`[allocations] failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
}
