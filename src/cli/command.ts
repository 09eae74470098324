import { parseArgs, type ParseArgsConfig } from 'node:util';

import { loadDotEnv } from '../config.js';
import { InvalidInput } from '../invalid-input.js';

/** Bad arguments, configuration or input: the user's to fix. */
const EXIT_INVALID_INPUT = 2;
const EXIT_FAILURE = 1;

type ParseArgsOptionsConfig = NonNullable<ParseArgsConfig['options']>;
type Arguments<Options extends ParseArgsOptionsConfig> = ReturnType<
  typeof parseArgs<{ options: Options; allowPositionals: true; strict: true }>
>;

export interface Command<Options extends ParseArgsOptionsConfig> {
  /** The program's name, which starts every line it reports. */
  name: string;
  /** What `--help` prints. */
  usage: string;
  options: Options;
  /** The name of the one positional argument the command requires, e.g. `FILE.json`; none unless given. */
  positional?: string;
  run(args: Arguments<Options>): Promise<void>;
}

/**
 * Every command's conventions in one place: `--help` prints the usage and exits 0; bad
 * arguments, configuration or input are one line each on stderr with exit code 2; any other
 * failure is one line with exit code 1; never a stack trace. `.env` is read before `run`.
 */
export async function runCommand<const Options extends ParseArgsOptionsConfig>(command: Command<Options>): Promise<void> {
  try {
    const args = parseArgs({
      options: { ...command.options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    }) as Arguments<Options> & { values: { help?: boolean } };
    if (args.values.help) {
      process.stdout.write(`${command.usage}\n`);
      return;
    }
    const expected = command.positional === undefined ? 0 : 1;
    if (args.positionals.length > expected) throw new InvalidInput([`unexpected argument "${args.positionals[expected]}" (see --help)`]);
    if (args.positionals.length < expected) throw new InvalidInput([`${command.positional} is required (see --help)`]);
    loadDotEnv();
    await command.run(args);
  } catch (error) {
    exitWith(command.name, error);
  }
}

/** A `--port` value: a whole number from 0 (any free port) to 65535. */
export function parsePort(text: string): number {
  if (!/^[0-9]{1,5}$/.test(text) || Number(text) > 65535)
    throw new InvalidInput([`--port must be a whole number from 0 to 65535, not "${text}"`]);
  return Number(text);
}

/**
 * Stops cleanly on SIGTERM or SIGINT, as npm, Docker, systemd or a terminal send them, then
 * exits 0 (1 when stopping failed). `stop` runs once: a terminal's Ctrl-C reaches this process
 * both directly and forwarded by npm.
 */
export function stopOnSignals(name: string, stop: (signal: NodeJS.Signals) => Promise<void>): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    stop(signal).then(
      () => process.exit(0),
      (error: unknown) => exitWith(name, error, EXIT_FAILURE),
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

/**
 * For a command that stops on its own at its next safe point: the signal is aborted by the first
 * SIGTERM or SIGINT (npm, Docker, systemd, a terminal), and `onStop` runs once then; later ones
 * (a terminal's Ctrl-C reaches the process both directly and through npm) change nothing.
 */
export function stopRequests(onStop: () => void): AbortSignal {
  const controller = new AbortController();
  const onSignal = () => {
    if (controller.signal.aborted) return;
    controller.abort();
    onStop();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return controller.signal;
}

/** Reports an error as the command's one-line messages and exits: 2 for what the user gave, else 1. */
function exitWith(name: string, error: unknown, code?: number): never {
  let lines = [messageOf(error)];
  let exitCode = EXIT_FAILURE;
  if (error instanceof InvalidInput) [lines, exitCode] = [error.problems, EXIT_INVALID_INPUT];
  // parseArgs explains at length how to pass a value starting with '-': its first sentence is the point.
  else if (isParseArgsError(error)) [lines, exitCode] = [[`${firstSentence(lines[0]!)} (see --help)`], EXIT_INVALID_INPUT];
  for (const line of lines) process.stderr.write(`${name}: ${line}\n`);
  process.exit(code ?? exitCode);
}

function isParseArgsError(error: unknown): boolean {
  return error instanceof TypeError && String((error as NodeJS.ErrnoException).code).startsWith('ERR_PARSE_ARGS');
}

function firstSentence(text: string): string {
  return text.split(/\.\s/)[0]!.replace(/\.$/, '');
}

/** One line, whatever the error: no stack, no line breaks. */
function messageOf(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.replace(/\s*\n\s*/g, ' ').trim();
}
