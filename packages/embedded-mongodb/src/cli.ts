#!/usr/bin/env node
import { parseArgs } from 'node:util';

import { ENGINE_OPTIONS, ENGINE_OPTIONS_HELP, EngineArgumentsError, startEngine } from './command-line.js';

const NAME = 'embedded-mongodb';

const USAGE = `Usage: embedded-mongodb --port N [--data-dir DIR] [--host H] [--replica-set NAME | --standalone] [--enable-test-commands]

Runs the embedded MongoDB-compatible engine and prints its connection string once
it accepts connections.

${ENGINE_OPTIONS_HELP}
  --help                this text`;

/**
 * The project's convention for every command, which this package cannot import from the gateway:
 * `--help` prints the usage and exits 0; bad arguments are one line each on stderr with exit code
 * 2; any other failure is one line with exit code 1; never a stack trace.
 */
function exitWith(error: unknown): never {
  let lines = [error instanceof Error ? error.message : String(error)];
  let code = 1;
  if (error instanceof EngineArgumentsError) [lines, code] = [error.problems, 2];
  // parseArgs explains at length how to pass a value starting with '-': its first sentence is the point.
  else if (error instanceof TypeError && String((error as NodeJS.ErrnoException).code).startsWith('ERR_PARSE_ARGS'))
    [lines, code] = [[`${lines[0]!.split(/\.\s/)[0]!.replace(/\.$/, '')} (see --help)`], 2];
  for (const line of lines) process.stderr.write(`${NAME}: ${line.replace(/\s*\n\s*/g, ' ').trim()}\n`);
  process.exit(code);
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { ...ENGINE_OPTIONS, help: { type: 'boolean', short: 'h' } }, strict: true });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const { server, announcement } = await startEngine(values);
  // Before it says it listens: whoever reads that may signal it at once. Stops once, however many signals come.
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    server.close().then(() => process.exit(0), exitWith);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  console.log(announcement);
}

main().catch(exitWith);
