import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

/** The project root, where `dist/` and `node_modules/` live. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** A child process the benchmark started, with what it printed (for error reports). */
export interface Child {
  name: string;
  process: ChildProcess;
  output(): string;
  /** Resident set size in bytes, read from /proc (Linux only; NaN elsewhere). */
  rss(): number;
  /** The largest resident set size so far, in bytes (Linux only; NaN elsewhere). */
  peakRss(): number;
  /** CPU time used so far (user + system), in seconds (Linux only; NaN elsewhere). */
  cpuSeconds(): number;
  stop(): Promise<void>;
}

/** A loopback port that was free a moment ago. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.listen(0, '127.0.0.1', resolve).once('error', reject));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('could not find a free port');
  return address.port;
}

/**
 * Starts `node ARGS…` in the project root. Node flags (e.g. `--cpu-prof`) can be
 * given in `nodeOptions`; the child's output is kept, not shown. `ipc`: with Node's IPC channel.
 */
export function startNode(
  name: string,
  args: string[],
  options: { env?: Record<string, string>; nodeOptions?: string[]; ipc?: boolean } = {},
): Child {
  const child = spawn(process.execPath, [...(options.nodeOptions ?? []), ...args], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: 'memory', ...options.env },
    stdio: options.ipc ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    name,
    process: child,
    output: () => output,
    rss: () => residentBytes(child.pid!),
    peakRss: () => residentBytes(child.pid!, 'VmHWM'),
    cpuSeconds: () => cpuSecondsOf(child.pid!),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const killed = await Promise.race([exited.then(() => true), sleep(15_000).then(() => false)]);
      if (!killed) {
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
}

/** Node flags that make a server write its CPU profiles to `.bench/profiles/<name>/` (read them with `profile-summary.ts`). */
export function cpuProfileFlags(name: string): string[] {
  return ['--cpu-prof', `--cpu-prof-dir=${join(ROOT, '.bench', 'profiles', name)}`];
}

/** Node flags that load `memory-probe.mjs` into a server, for `collectedHeap`. */
export const MEMORY_PROBE = ['--expose-gc', '--import', './test/bench/memory-probe.mjs'];

/**
 * The V8 heap of a server once it has collected its garbage, in bytes: what it still uses, and
 * what V8 keeps committed for it (used or not: a young generation grown by past allocation, pages
 * left part-empty), which RSS counts.
 */
export interface CollectedHeap {
  used: number;
  committed: number;
}

/** Has a server started with `MEMORY_PROBE` collect its garbage; resolves, once it has, with its heap. */
export async function collectedHeap(child: Child): Promise<CollectedHeap> {
  const { heapUsed, heapTotal } = await askProbe<{ heapUsed: number; heapTotal: number }>(child, 'memory-probe');
  return { used: heapUsed, committed: heapTotal };
}

/**
 * Sends SIGUSR2 to a server with a probe of the benchmark loaded (`memory-probe.mjs`,
 * `allocation-probe.mjs`), and resolves with the JSON of the next line the probe prints on stderr
 * (`[<probe>] {…}`).
 */
export async function askProbe<T>(child: Child, probe: string, timeoutMs = 60_000): Promise<T> {
  const stderr = child.process.stderr!;
  const pattern = new RegExp(`^\\[${probe}\\] (\\{.*\\})\\n`, 'm');
  let pending = '';
  let answer: string | undefined;
  const onData = (chunk: Buffer) => {
    pending += chunk.toString();
    answer ??= pattern.exec(pending)?.[1];
  };
  stderr.on('data', onData);
  try {
    child.process.kill('SIGUSR2');
    for (const deadline = Date.now() + timeoutMs; answer === undefined; await sleep(10)) {
      if (Date.now() > deadline) throw new Error(`${child.name} did not answer its ${probe}:\n${child.output()}`);
    }
    return JSON.parse(answer) as T;
  } finally {
    stderr.off('data', onData);
  }
}

/**
 * The embedded engine in a process of its own, in memory, added to `children` (which the caller
 * stops); resolves once it listens, with its server's URI.
 */
export async function startEmbeddedEngine(children: Child[]): Promise<{ engine: Child; server: string }> {
  const engine = startNode('embedded engine', ['dist/cli/embedded-db.js', '--port', String(await freePort())]);
  children.push(engine);
  const [server] = (await waitForOutput(engine, /mongodb:\/\/127\.0\.0\.1:\d+\/\S*/)) as unknown as [string];
  return { engine, server };
}

/** The gateway's live-connection caps raised, for a benchmark whose every subscriber comes from one address. */
export const UNCAPPED_LIVE_CONNECTIONS: Record<string, string> = {
  SUBSCRIPTIONS_PER_CALLER: '1000000',
  LIVE_CONNECTIONS_PER_CALLER: '1000000',
  WEBSOCKETS_PER_ADDRESS: '1000000',
};

/** Where a server of the benchmark serves and what it reads: its port, the database, the JWT secret. */
export interface BenchServer {
  port: number;
  uri: string;
  jwtSecret: string;
  /** Node flags, e.g. `--cpu-prof` (`--profile`). */
  nodeOptions?: string[];
}

/** The gateway as the benchmark runs it (production, no rate limit, warnings only, no seed file), `env` on top. */
export function startGateway(name: string, { port, uri, jwtSecret, nodeOptions }: BenchServer, env: Record<string, string> = {}): Child {
  return startNode(name, ['dist/main.js'], {
    env: { ...gatewayEnv(port, jwtSecret), MONGODB_URI: uri, SEED_FILE: '', ...env },
    nodeOptions,
  });
}

/**
 * The gateway on an embedded engine of its own, in memory (`DATA_DIR=memory`), with the demo
 * data unless `env` names another seed file.
 */
export function startGatewayInMemory(
  name: string,
  { port, jwtSecret, nodeOptions }: Omit<BenchServer, 'uri'>,
  env: Record<string, string> = {},
): Child {
  return startNode(name, ['dist/main.js'], { env: { ...gatewayEnv(port, jwtSecret), DATA_DIR: 'memory', ...env }, nodeOptions });
}

/** What every gateway of the benchmark runs with: production, no rate limit, warnings only, on loopback. */
function gatewayEnv(port: number, jwtSecret: string): Record<string, string> {
  return { NODE_ENV: 'production', RATE_LIMIT: '0', LOG_LEVEL: 'warn', PORT: String(port), HOST: '127.0.0.1', JWT_SECRET: jwtSecret };
}

/** A peer of `test/bench/servers/` (`floor` runs `floor.ts`, `express_floor` `express-floor.ts`), run by tsx. */
export function startPeer(name: string, { port, uri, jwtSecret, nodeOptions = [] }: BenchServer, env: Record<string, string> = {}): Child {
  // `--secret=…` in one argument: a random secret may begin with '-', which would read as an option.
  return startNode(
    name,
    [`test/bench/servers/${name.replaceAll('_', '-')}.ts`, '--port', String(port), '--uri', uri, `--secret=${jwtSecret}`],
    { env: { NODE_ENV: 'production', ...env }, nodeOptions: ['--import', 'tsx', ...nodeOptions] },
  );
}

/** Waits until the child prints a line matching `pattern`; returns the match. */
export async function waitForOutput(child: Child, pattern: RegExp, timeoutMs = 60_000): Promise<RegExpMatchArray> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const match = child.output().match(pattern);
    if (match) return match;
    if (child.process.exitCode !== null) break;
    await sleep(50);
  }
  throw new Error(`${child.name} did not start:\n${child.output()}`);
}

/** Waits until `url` answers 200. */
export async function waitForHttp(child: Child, url: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.process.exitCode !== null) break;
    try {
      const response = await fetch(url);
      await response.arrayBuffer();
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`${child.name} did not answer ${url}:\n${child.output()}`);
}

/** `VmRSS` (now) or `VmHWM` (the peak so far) of a process, in bytes. */
function residentBytes(pid: number, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kilobytes = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(status)?.[1];
    if (kilobytes !== undefined) return Number(kilobytes) * 1024;
  } catch {
    // no /proc: not Linux, or the process is gone
  }
  return Number.NaN;
}

/** Clock ticks per second of /proc/PID/stat times: 100 on every common Linux build. */
const CLOCK_TICKS = 100;

function cpuSecondsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start at field 3; utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return Number.NaN;
  }
}

/** One attack of a script that runs each against a fresh gateway: its name (for `--only`) and what it does. */
export interface NamedAttack {
  name: string;
  what: string;
}

/**
 * Runs the attacks `--only` names (every one by default) one after the other, each against the
 * gateway built at `--main` (default `dist/main.js`), and prints their outcomes as a table.
 */
export async function runAttacks<A extends NamedAttack, O>(
  attacks: readonly A[],
  run: (attack: A, main: string) => Promise<O>,
): Promise<void> {
  const { values } = parseArgs({ options: { main: { type: 'string', default: 'dist/main.js' }, only: { type: 'string' } } });
  const only = values.only?.split(',');
  const outcomes: O[] = [];
  for (const attack of attacks.filter((candidate) => only === undefined || only.includes(candidate.name))) {
    console.error(`${attack.name}: ${attack.what}`);
    outcomes.push(await run(attack, values.main));
  }
  console.table(outcomes);
}
