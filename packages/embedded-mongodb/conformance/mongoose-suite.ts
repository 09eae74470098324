/**
 * Runs Mongoose's own test suite against the engine and prints, per test file,
 * how many tests passed, failed and were skipped, then every failure classified
 * as an engine refusal (something the engine openly does not implement) or a
 * difference (the engine answered, but not as MongoDB would).
 *
 *   npm run conformance -- <path to a mongoose checkout> [--replica-set | --standalone] [--uri URI] [--json FILE]
 *
 * With --driver-spec it runs the MongoDB Node.js driver's specification tests instead
 * (driver-spec.ts), the other measure of the engine `npm run conformance` takes.
 *
 * The checkout needs its dev dependencies (`npm install --ignore-scripts` in it).
 * Nothing is downloaded: Mongoose's test setup only starts mongodb-memory-server
 * when MONGOOSE_TEST_URI is unset, and it is always set here.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { MongoClient } from 'mongodb';

import { DRIVER_SPEC_USAGE, driverSpecOptions, runDriverSpec } from './driver-spec.js';

const USAGE = `Usage: npm run conformance -- <mongoose checkout> [options]

Runs Mongoose's test suite (mocha, test/**/*.test.js, 10 s per test as its CI) against
the embedded engine and prints counts per file and the classified failures.

  --replica-set   tell the suite the server is a replica set member (REPLICA_SET=<its set
                  name>, as Mongoose's CI does), so that it also runs its change stream and
                  transaction tests
  --standalone    engine as a standalone server (no change streams, no retryable writes)
  --uri URI       use the server at URI instead of starting one
  --json FILE     also write mocha's JSON report to FILE
  --help          this text

${DRIVER_SPEC_USAGE}`;

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

/** A failure the engine owns up to: it said it does not implement something. */
const REFUSAL = /not supported by the embedded engine|no such command/;

interface MochaTest {
  fullTitle: string;
  file?: string;
  err: { message?: string; code?: number; errorResponse?: { errmsg?: string } };
}

interface MochaReport {
  stats: { tests: number; passes: number; failures: number; pending: number; duration: number };
  passes: MochaTest[];
  failures: MochaTest[];
  pending: MochaTest[];
}

function fail(message: string): never {
  console.error(message);
  process.exit(2);
}

async function startEngine(standalone: boolean): Promise<{ uri: string; stop: () => Promise<void> }> {
  if (!existsSync(CLI)) fail(`${CLI} is missing: build first (npm run build)`);
  const child = spawn(process.execPath, [CLI, '--port', '0', ...(standalone ? ['--standalone'] : [])], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const uri = await new Promise<string>((resolvePromise, reject) => {
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
      const match = /mongodb:\/\/\S+/.exec(output);
      if (match) resolvePromise(match[0]);
    });
    child.once('exit', (code) => reject(new Error(`the engine exited with ${code} before listening: ${output}`)));
  });
  return {
    uri,
    async stop() {
      child.kill('SIGTERM');
      if (child.exitCode === null) await once(child, 'exit');
    },
  };
}

/** The replica set the server belongs to (from its hello), for the suite's REPLICA_SET. */
async function replicaSetName(uri: string): Promise<string> {
  const client = await MongoClient.connect(uri);
  try {
    const hello = await client.db('admin').command({ hello: 1 });
    if (typeof hello.setName !== 'string') fail(`${uri} is not a replica set member; drop --replica-set`);
    return hello.setName;
  } finally {
    await client.close();
  }
}

async function runMocha(checkout: string, uri: string, replicaSet: string | undefined, output: string): Promise<void> {
  const mocha = join(checkout, 'node_modules/mocha/bin/mocha.js');
  if (!existsSync(mocha)) fail(`${mocha} is missing: run \`npm install --ignore-scripts\` in ${checkout} first`);
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? tmpdir(),
    MONGOOSE_TEST_URI: uri,
    // Should anything still try to start mongodb-memory-server, it fails instead of downloading a binary.
    MONGOMS_SYSTEM_BINARY: '/nonexistent/mongod',
    ...(replicaSet ? { REPLICA_SET: replicaSet } : {}),
  };
  const args = [
    mocha,
    '--exit',
    '--timeout',
    '10000',
    '--ignore',
    'test/encryption/**/*.test.js',
    './test/**/*.test.js',
    '--reporter',
    'json',
    '--reporter-option',
    `output=${output}`,
  ];
  const child = spawn(process.execPath, args, { cwd: checkout, env, stdio: ['ignore', 'ignore', 'inherit'] });
  await once(child, 'exit');
  if (!existsSync(output)) fail('mocha wrote no report');
}

function reasonOf(test: MochaTest): string {
  const message = test.err.errorResponse?.errmsg ?? test.err.message ?? '';
  return message.split('\n')[0]!.slice(0, 160);
}

function report(checkout: string, result: MochaReport, seconds: number): void {
  const files = new Map<string, { passes: number; failures: number; pending: number }>();
  const fileOf = (test: MochaTest): string => (test.file ? relative(checkout, test.file) : '(no file)');
  const count = (tests: MochaTest[], key: 'passes' | 'failures' | 'pending'): void => {
    for (const test of tests) {
      const file = fileOf(test);
      const counts = files.get(file) ?? { passes: 0, failures: 0, pending: 0 };
      counts[key]++;
      files.set(file, counts);
    }
  };
  count(result.passes, 'passes');
  count(result.failures, 'failures');
  count(result.pending, 'pending');

  const refusals = result.failures.filter((test) => REFUSAL.test(reasonOf(test)));
  const differences = result.failures.filter((test) => !REFUSAL.test(reasonOf(test)));
  const { stats } = result;
  console.log(
    `Mongoose suite: ${stats.tests} tests in ${files.size} files, ${stats.passes} passed, ${stats.failures} failed (${refusals.length} engine refusals, ${differences.length} differences), ${stats.pending} skipped; ${seconds.toFixed(0)} s\n`,
  );

  console.log('Files with failures (passed / failed / skipped):');
  for (const [file, counts] of [...files].sort(([a], [b]) => a.localeCompare(b))) {
    if (counts.failures > 0) console.log(`  ${file}: ${counts.passes} / ${counts.failures} / ${counts.pending}`);
  }

  console.log(`\nEngine refusals (${refusals.length}), by reason:`);
  // Field names and option values vary; the kind of refusal is what counts.
  const kindOf = (test: MochaTest): string =>
    reasonOf(test)
      .replace(/'[^']*'/g, "'…'")
      .replace(/\{.*\}(?= is not)/, '{…}');
  const byReason = new Map<string, number>();
  for (const test of refusals) byReason.set(kindOf(test), (byReason.get(kindOf(test)) ?? 0) + 1);
  for (const [reason, n] of [...byReason].sort((a, b) => b[1] - a[1])) console.log(`  ${n} × ${reason}`);

  console.log(`\nDifferences (${differences.length}):`);
  for (const test of differences) console.log(`  ${fileOf(test)}: ${test.fullTitle}\n      ${reasonOf(test)}`);
}

async function main(): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({
      allowPositionals: true,
      options: {
        'replica-set': { type: 'boolean', default: false },
        standalone: { type: 'boolean', default: false },
        uri: { type: 'string' },
        json: { type: 'string' },
        'driver-spec': { type: 'string' },
        area: { type: 'string', multiple: true },
        grep: { type: 'string' },
        'test-timeout': { type: 'string' },
        log: { type: 'string' },
        help: { type: 'boolean', default: false },
      },
    });
  } catch (error) {
    fail(`${(error as Error).message} (see --help)`);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(USAGE);
    return;
  }
  if (values['driver-spec'] !== undefined) {
    if (positionals.length > 0 || values['replica-set'] || values.uri)
      fail('--driver-spec takes no mongoose checkout, --replica-set or --uri');
    await runDriverSpec(driverSpecOptions(values), values.json);
    return;
  }
  if (positionals.length !== 1) fail('give the path of a mongoose checkout (see --help)');
  if (values['replica-set'] && values.standalone) fail('--replica-set and --standalone exclude each other');
  const checkout = resolve(positionals[0]!);
  if (!existsSync(join(checkout, 'test/common.js'))) fail(`${checkout} is not a mongoose checkout (no test/common.js)`);

  const engine = values.uri ? { uri: values.uri, stop: async () => {} } : await startEngine(values.standalone);
  const directory = mkdtempSync(join(tmpdir(), 'mongoose-suite-'));
  const output = join(directory, 'report.json');
  const started = Date.now();
  try {
    await runMocha(checkout, engine.uri, values['replica-set'] ? await replicaSetName(engine.uri) : undefined, output);
  } finally {
    await engine.stop();
  }
  const json = readFileSync(output, 'utf8');
  rmSync(directory, { recursive: true, force: true });
  if (values.json) writeFileSync(values.json, json);
  report(checkout, JSON.parse(json) as MochaReport, (Date.now() - started) / 1000);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
