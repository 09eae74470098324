import { runNode } from './node-process.js';

/** Runs a built command (`dist/cli/<script>.js`) with exactly the given environment plus PATH; never rejects. */
export function runCommand(script: string, args: string[], env: Record<string, string> = {}): ReturnType<typeof runNode> {
  return runNode(`dist/cli/${script}.js`, args, env);
}
