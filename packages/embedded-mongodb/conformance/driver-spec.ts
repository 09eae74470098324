/**
 * Runs the MongoDB Node.js driver's own specification tests (its unified test
 * runner and CMAP runner, as the driver's CI runs them) against the engine, a
 * fresh engine for each spec file, and prints per area how many tests ran,
 * passed, were refused by the engine, behaved differently from MongoDB, hung,
 * needed what a one-member deployment cannot give, or were skipped by their
 * own requirements.
 *
 *   npm run conformance -- --driver-spec <checkout of mongodb/node-mongodb-native> [--standalone]
 *
 * The checkout needs its dev dependencies (`npm install --ignore-scripts` in it).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { createWriteStream, existsSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { type EmbeddedServer, startEmbeddedServer } from '../src/index.js';

export const DRIVER_SPEC_USAGE = `Usage: npm run conformance -- --driver-spec <driver checkout> [options]

Runs the MongoDB Node.js driver's specification tests (mocha, the driver's own test
harness) against the embedded engine, a fresh engine per spec file, and prints a
table per area. The engine is a one-member replica set unless --standalone.

  --standalone        engine as a standalone server
  --area NAME         run only this area (repeatable), e.g. --area crud
  --grep PATTERN      run only tests whose title matches (mocha's --grep)
  --test-timeout MS   a test still running after MS is counted as hung (default 45000, past the
                      driver's 30 s server selection timeout)
  --log FILE          the driver harness's own output (default: discarded)
  --json FILE         also write every test's outcome to FILE
  --help              this text`;

/** The areas of the specifications, each with the driver's test files that run them. */
const AREAS: Record<string, string[]> = {
  crud: ['crud/crud.spec.test.ts'],
  'change-streams': ['change-streams/change_streams.spec.test.ts'],
  'retryable-reads': ['retryable-reads/retryable_reads.spec.test.ts'],
  'retryable-writes': ['retryable-writes/retryable_writes.spec.test.ts'],
  sessions: ['sessions/sessions.spec.test.ts'],
  'causal-consistency': ['causal-consistency/causal_consistency.spec.test.ts'],
  'command-logging-and-monitoring': ['command-logging-and-monitoring/command_logging_and_monitoring.spec.test.ts'],
  'collection-management': ['collection-management/collection_management.spec.test.ts'],
  'index-management': ['index-management/search-index-management.spec.test.ts'],
  'read-write-concern': ['read-write-concern/read_write_concern.spec.test.ts'],
  transactions: ['transactions/transactions.spec.test.ts'],
  'transactions-convenient-api': ['transactions-convenient-api/transactions-convenient-api.spec.test.ts'],
  'run-command': ['run-command/run_command.spec.test.ts'],
  gridfs: ['gridfs/gridfs.spec.test.ts'],
  'versioned-api': ['versioned-api/versioned_api.spec.test.ts'],
  'client-side-operations-timeout': ['client-side-operations-timeout/client_side_operations_timeout.spec.test.ts'],
  'server-discovery-and-monitoring': ['server-discovery-and-monitoring/server_discovery_and_monitoring.spec.test.ts'],
  'connection-monitoring-and-pooling': ['connection-monitoring-and-pooling/connection_monitoring_and_pooling.spec.test.ts'],
  'client-backpressure': ['client-backpressure/client-backpressure.spec.test.ts'],
};

const PLUGIN = fileURLToPath(new URL('./driver-spec-mocha.cjs', import.meta.url));

type Outcome = 'passed' | 'skipped' | 'failed' | 'hook failed';

interface TestResult {
  outcome: Outcome;
  title: string;
  error?: { message: string; code?: number; errmsg?: string };
}

interface Verdict extends TestResult {
  area: string;
  kind: Kind;
  reason: string;
}

const KINDS = ['passed', 'refused', 'differing', 'hung', 'one-member', 'no fail point', 'skipped'] as const;
type Kind = (typeof KINDS)[number];

/** A failure the engine owns up to: it said it does not implement something, or has no such command. */
const REFUSAL = /not supported by the embedded engine|no such command/;
/** The engine had no configureFailPoint (test commands off, or an engine without them). */
const NO_FAIL_POINT = /no such command: 'configureFailPoint'/;
/**
 * What a one-member deployment cannot give: a member other than the primary
 * (the primary is always there, so a server selection that times out was
 * waiting for a secondary), or heartbeats from three members at once.
 */
const ONE_MEMBER = /Server selection timed out after \d+ ms|Timed out waiting for serverHeartbeatSucceededEvent/;
const HUNG = /Timeout of \d+ms exceeded/;

function reasonOf(result: TestResult): string {
  const error = result.error;
  if (!error) return '';
  const lines = `${error.errmsg ?? ''}\n${error.message}`.split('\n').map((line) => line.replace(/^\w*Error: /, '').trim());
  return (lines.find((line) => line.length > 0 && !/^Original Error Stack:$/i.test(line)) ?? '').slice(0, 200);
}

/**
 * One result per test: its first failure (a failed setup hook, or the test
 * itself), since what fails after it (the driver's leak checks after each
 * test) only follows from it; a failed hook after a passed test fails it.
 */
function perTest(results: TestResult[]): TestResult[] {
  const byTitle = new Map<string, TestResult>();
  for (const result of results) {
    const earlier = byTitle.get(result.title);
    if (earlier && earlier.outcome !== 'passed') continue;
    byTitle.set(result.title, earlier ? { ...result, outcome: 'failed' } : result);
  }
  return [...byTitle.values()];
}

function classify(area: string, result: TestResult): Verdict {
  const reason = reasonOf(result);
  const message = `${result.error?.errmsg ?? ''} ${result.error?.message ?? ''}`;
  let kind: Kind;
  if (result.outcome === 'passed') kind = 'passed';
  else if (result.outcome === 'skipped') kind = 'skipped';
  else if (HUNG.test(message)) kind = 'hung';
  else if (NO_FAIL_POINT.test(message)) kind = 'no fail point';
  else if (REFUSAL.test(message)) kind = 'refused';
  else if (ONE_MEMBER.test(message)) kind = 'one-member';
  else kind = 'differing';
  return { ...result, area, kind, reason };
}

interface Options {
  checkout: string;
  standalone: boolean;
  areas: string[];
  grep: string | undefined;
  testTimeoutMs: number;
  log: string | undefined;
}

/** One engine after another on the same port, so that the harness's connection string stays valid. */
class FreshEngines {
  private server: EmbeddedServer | undefined;
  private port = 0;

  constructor(private readonly standalone: boolean) {}

  get uri(): string {
    return this.standalone ? `mongodb://127.0.0.1:${this.port}/` : `mongodb://127.0.0.1:${this.port}/?replicaSet=rs0`;
  }

  async next(): Promise<void> {
    await this.server?.close();
    this.server = await startEmbeddedServer({
      port: this.port,
      replicaSet: this.standalone ? false : 'rs0',
      enableTestCommands: true,
    });
    this.port = Number(new URL(this.server.uri).port);
  }

  async close(): Promise<void> {
    await this.server?.close();
    this.server = undefined;
  }
}

/** Runs one area's test files in the driver's mocha, restarting the engine per spec file. */
async function runArea(options: Options, engines: FreshEngines, files: string[], log: NodeJS.WritableStream): Promise<TestResult[]> {
  // mocha's in-process runner: bin/mocha.js would start another process, out of reach of the IPC channel.
  const args = [
    '--enable-source-maps',
    join(options.checkout, 'node_modules/mocha/bin/_mocha'),
    '--config',
    'test/mocha_mongodb.js',
    '--require',
    PLUGIN,
    '--reporter',
    PLUGIN,
    '--timeout',
    String(options.testTimeoutMs),
    '--exit',
    ...(options.grep ? ['--grep', options.grep] : []),
    ...files.map((file) => join('test/integration', file)),
  ];
  const env = { ...process.env, MONGODB_URI: engines.uri, AUTH: 'noauth', NODE_NO_WARNINGS: '1' };
  const child = spawn(process.execPath, args, { cwd: options.checkout, env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  child.stdout?.pipe(log, { end: false });
  child.stderr?.pipe(log, { end: false });
  const results: TestResult[] = [];
  // Mocha itself must end: a test that never settles is bounded by --timeout, a whole
  // run by every test's timeout at worst.
  const watchdog = setTimeout(() => child.kill('SIGKILL'), 4 * 60 * 60 * 1000);
  await new Promise<void>((resolvePromise) => {
    child.on('message', (message: { result?: TestResult; fresh?: string; id?: string; done?: boolean }) => {
      if (message.result) results.push(message.result);
      if (message.fresh !== undefined) void answerFresh(child, engines, message.id!);
    });
    child.once('exit', () => resolvePromise());
  });
  clearTimeout(watchdog);
  return results;
}

async function answerFresh(child: ChildProcess, engines: FreshEngines, id: string): Promise<void> {
  await engines.next();
  child.send({ answers: id });
}

function driverVersion(checkout: string): string {
  const git = (args: string[]): string => {
    try {
      return execFileSync('git', args, { cwd: checkout, encoding: 'utf8' }).trim();
    } catch {
      return '?';
    }
  };
  return `${git(['describe', '--tags', '--always'])} (${git(['rev-parse', 'HEAD'])})`;
}

function printTable(verdicts: Verdict[], areas: string[]): void {
  const header = ['area', 'run', ...KINDS];
  const rows = areas.map((area) => {
    const mine = verdicts.filter((verdict) => verdict.area === area);
    const count = (kind: Kind): number => mine.filter((verdict) => verdict.kind === kind).length;
    return [area, String(mine.length - count('skipped')), ...KINDS.map((kind) => String(count(kind)))];
  });
  const total = header.slice(1).map((_, column) => String(rows.reduce((sum, row) => sum + Number(row[column + 1]), 0)));
  rows.push(['total', ...total]);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]): string =>
    cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ');
  console.log(line(header));
  for (const row of rows) console.log(line(row));
}

function printDetails(verdicts: Verdict[]): void {
  const refusals = new Map<string, number>();
  for (const verdict of verdicts.filter((v) => v.kind === 'refused')) {
    let message = `${verdict.error?.errmsg ?? ''} ${verdict.error?.message ?? ''}`;
    for (let before = ''; before !== message;) [before, message] = [message, message.replace(/\{[^{}]*\}/g, '{…}')];
    const phrase = /no such command: '[^']*'|[^:;]*? is not supported by the embedded engine/i.exec(message)?.[0] ?? verdict.reason;
    // The kind of refusal counts, not the option or value it names; the runner lower-cases some messages.
    const kind = phrase.trim().replace(/^([a-z])/, (letter) => letter.toUpperCase());
    refusals.set(kind, (refusals.get(kind) ?? 0) + 1);
  }
  console.log(`\nRefused by the engine, by reason:`);
  for (const [reason, n] of [...refusals].sort((a, b) => b[1] - a[1])) console.log(`  ${n} × ${reason}`);
  for (const kind of ['differing', 'hung', 'one-member'] as const) {
    const listed = verdicts.filter((verdict) => verdict.kind === kind);
    console.log(`\n${kind} (${listed.length}):`);
    for (const verdict of listed) console.log(`  [${verdict.area}] ${verdict.title}\n      ${verdict.reason}`);
  }
}

export async function runDriverSpec(options: Options, json: string | undefined): Promise<void> {
  const mocha = join(options.checkout, 'node_modules/mocha/bin/mocha.js');
  if (!existsSync(join(options.checkout, 'test/tools/unified-spec-runner/runner.ts'))) {
    throw new Error(`${options.checkout} is not a checkout of mongodb/node-mongodb-native (no unified test runner)`);
  }
  if (!existsSync(mocha)) throw new Error(`${mocha} is missing: run \`npm install --ignore-scripts\` in ${options.checkout} first`);
  const unknown = options.areas.filter((area) => !(area in AREAS));
  if (unknown.length > 0) throw new Error(`unknown area ${unknown.join(', ')}; areas: ${Object.keys(AREAS).join(', ')}`);
  const areas = options.areas.length > 0 ? options.areas : Object.keys(AREAS);

  console.log(
    `Driver ${driverVersion(options.checkout)}; engine as ${options.standalone ? 'a standalone server' : 'a one-member replica set'}`,
  );
  const log = options.log ? createWriteStream(options.log) : createWriteStream('/dev/null');
  const engines = new FreshEngines(options.standalone);
  await engines.next();
  const verdicts: Verdict[] = [];
  const started = Date.now();
  try {
    for (const area of areas) {
      const areaStarted = Date.now();
      const results = perTest(await runArea(options, engines, AREAS[area]!, log));
      verdicts.push(...results.map((result) => classify(area, result)));
      console.log(`  ${area}: ${results.length} tests, ${((Date.now() - areaStarted) / 1000).toFixed(0)} s`);
    }
  } finally {
    await engines.close();
    log.end();
  }
  console.log(`\n${((Date.now() - started) / 1000).toFixed(0)} s in all\n`);
  printTable(verdicts, areas);
  printDetails(verdicts);
  if (json) writeFileSync(json, JSON.stringify(verdicts, null, 2));
}

export function driverSpecOptions(values: {
  'driver-spec'?: string;
  standalone?: boolean;
  area?: string[];
  grep?: string;
  'test-timeout'?: string;
  log?: string;
}): Options {
  const timeout = Number(values['test-timeout'] ?? '45000');
  if (!Number.isInteger(timeout) || timeout <= 0) throw new Error(`--test-timeout must be a positive number of milliseconds`);
  return {
    checkout: resolve(values['driver-spec']!),
    standalone: values.standalone ?? false,
    areas: values.area ?? [],
    grep: values.grep,
    testTimeoutMs: timeout,
    log: values.log,
  };
}
