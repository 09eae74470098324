import { spawn, type ChildProcess } from 'node:child_process';

export interface NodeProcess {
  child: ChildProcess;
  /** Everything written to stdout so far. */
  stdout(): string;
  /** Waits until stdout matches `pattern`; rejects after `timeoutMs` or if the process exits first. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Settles when the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Runs a built script (`dist/...`) with exactly `env` plus PATH, so the test's own
 * environment (MONGODB_URI, JWT_SECRET, ...) cannot leak in.
 */
export function spawnNode(script: string, args: string[] = [], env: Record<string, string> = {}): NodeProcess {
  const child = spawn(process.execPath, [script, ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );

  return {
    child,
    stdout: () => stdout,
    exited,
    waitFor(pattern, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = pattern.exec(stdout);
          if (match === null) return false;
          finish();
          resolve(match);
          return true;
        };
        const timer = setTimeout(() => {
          finish();
          reject(new Error(`${script} did not print ${pattern} within ${timeoutMs} ms; stdout:\n${stdout}\nstderr:\n${stderr}`));
        }, timeoutMs);
        const onExit = () => {
          if (check()) return;
          finish();
          reject(new Error(`${script} exited before printing ${pattern}; stdout:\n${stdout}\nstderr:\n${stderr}`));
        };
        const finish = () => {
          clearTimeout(timer);
          child.stdout!.off('data', check);
          child.off('exit', onExit);
        };
        if (check()) return;
        child.stdout!.on('data', check);
        child.once('exit', onExit);
      });
    },
  };
}
