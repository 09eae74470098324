import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a built command (`dist/cli/<script>.js`) with exactly the given environment plus PATH; never rejects. */
export async function runCommand(script: string, args: string[], env: Record<string, string> = {}): Promise<CommandResult> {
  try {
    const { stdout, stderr } = await run(process.execPath, [`dist/cli/${script}.js`, ...args], {
      env: { PATH: process.env.PATH!, ...env },
      timeout: 20_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}
