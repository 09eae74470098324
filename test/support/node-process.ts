import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';

export interface NodeProcess {
  child: ChildProcess;
  /** Everything written to stdout so far. */
  stdout(): string;
  /** Everything written to stderr so far. */
  stderr(): string;
  /** Waits until the stream (stdout unless told) matches `pattern`; rejects after `timeoutMs` or if the process exits first. */
  waitFor(pattern: RegExp, options?: { timeoutMs?: number; stream?: 'stdout' | 'stderr' }): Promise<RegExpMatchArray>;
  /** Settles when the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface SpawnOptions {
  /** The working directory (where `.env` is read); the project's unless given. */
  cwd?: string;
  /** Node's own flags, before the script. */
  nodeFlags?: string[];
}

/**
 * What every process a test starts runs with, before the test's own `env`: the embedded engine
 * in memory, so that no test leaves a data directory behind (a test of DATA_DIR gives its own).
 */
export const TEST_PROCESS_ENV = { DATA_DIR: 'memory' };

/**
 * Runs a built script (`dist/...`) with exactly `env` plus PATH (and DATA_DIR=memory unless `env`
 * says otherwise), so the test's own environment (MONGODB_URI, JWT_SECRET, ...) cannot leak in.
 */
export function spawnNode(script: string, args: string[] = [], env: Record<string, string> = {}, options: SpawnOptions = {}): NodeProcess {
  return watch(
    script,
    spawn(process.execPath, [...(options.nodeFlags ?? []), resolve(script), ...args], {
      env: { PATH: process.env.PATH ?? '', ...TEST_PROCESS_ENV, ...env },
      cwd: options.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
}

/**
 * Runs `npm <args>` in the project as a terminal would, in its own process group, so a test can
 * signal the npm process alone and then check that nothing of the group is left.
 */
export function spawnNpm(args: string[], env: Record<string, string> = {}): NodeProcess {
  return watch(
    `npm ${args.join(' ')}`,
    spawn('npm', args, {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...TEST_PROCESS_ENV, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    }),
  );
}

/** True while any process of the group led by `pid` is alive. */
export function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** `node dist/main.js` with no MONGODB_URI (the embedded engine, its demo data), once it has printed its URL and the demo token. */
export async function startDemoGateway(
  env: Record<string, string> = {},
  options: SpawnOptions = {},
): Promise<{ service: NodeProcess; url: string; token: string }> {
  const service = spawnNode('dist/main.js', [], { PORT: '0', HOST: '127.0.0.1', ...env }, options);
  try {
    const [, url] = (await service.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/, { stream: 'stderr' })) as unknown as [
      string,
      string,
    ];
    await service.waitFor(/Try:\n(?:.*\n)+?\n/, { stream: 'stderr' });
    const token = /^ {2}(ey[\w-]+\.[\w-]+\.[\w-]+)$/m.exec(service.stderr())?.[1] ?? '';
    return { service, url, token };
  } catch (error) {
    await killIfRunning(service);
    throw error;
  }
}

/** Kills a process that is still running (SIGKILL) and waits for its end. */
export async function killIfRunning(service: NodeProcess | undefined): Promise<void> {
  if (service?.child.exitCode !== null || service.child.signalCode !== null) return;
  service.child.kill('SIGKILL');
  await service.exited;
}

/** Runs a built command to its end with exactly `env` plus PATH (and DATA_DIR=memory unless `env` says otherwise); never rejects. */
export async function runNode(
  script: string,
  args: string[],
  env: Record<string, string> = {},
  options: SpawnOptions = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [...(options.nodeFlags ?? []), resolve(script), ...args], {
      env: { PATH: process.env.PATH!, ...TEST_PROCESS_ENV, ...env },
      cwd: options.cwd,
      timeout: 30_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

function watch(name: string, child: ChildProcess): NodeProcess {
  const output = { stdout: '', stderr: '' };
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output.stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output.stderr += chunk));
  // 'close' rather than 'exit': by then everything the process wrote has been read.
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  );

  return {
    child,
    stdout: () => output.stdout,
    stderr: () => output.stderr,
    exited,
    waitFor(pattern, { timeoutMs = 20_000, stream = 'stdout' } = {}) {
      const source = stream === 'stdout' ? child.stdout! : child.stderr!;
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = pattern.exec(output[stream]);
          if (match === null) return false;
          finish();
          resolve(match);
          return true;
        };
        const timer = setTimeout(() => {
          finish();
          reject(
            new Error(`${name} did not print ${pattern} within ${timeoutMs} ms; stdout:\n${output.stdout}\nstderr:\n${output.stderr}`),
          );
        }, timeoutMs);
        const onExit = () => {
          if (check()) return;
          finish();
          reject(new Error(`${name} exited before printing ${pattern}; stdout:\n${output.stdout}\nstderr:\n${output.stderr}`));
        };
        const finish = () => {
          clearTimeout(timer);
          source.off('data', check);
          child.off('close', onExit);
        };
        if (check()) return;
        source.on('data', check);
        child.once('close', onExit);
      });
    },
  };
}
