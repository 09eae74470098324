import type { parseArgs, ParseArgsConfig } from 'node:util';

import { type EmbeddedServer, startEmbeddedServer } from './server.js';

/**
 * The engine's command-line options, for node:util's `parseArgs`: the package's own bin
 * (`cli.ts`) and any command that runs the engine alone take the same ones.
 */
export const ENGINE_OPTIONS = {
  port: { type: 'string' },
  'data-dir': { type: 'string' },
  host: { type: 'string', default: '127.0.0.1' },
  'replica-set': { type: 'string', default: 'rs0' },
  standalone: { type: 'boolean', default: false },
  'enable-test-commands': { type: 'boolean', default: false },
} as const satisfies NonNullable<ParseArgsConfig['options']>;

/** The options' values as `parseArgs` answers them for `ENGINE_OPTIONS`. */
export type EngineArguments = ReturnType<typeof parseArgs<{ options: typeof ENGINE_OPTIONS; strict: true }>>['values'];

/** What `--help` says of `ENGINE_OPTIONS`, one option a line (or two), indented by two spaces. */
export const ENGINE_OPTIONS_HELP = `  --port N              TCP port, required (27017 is MongoDB's usual one; 0 picks a free one)
  --data-dir DIR        keep the data in DIR (created if missing): every acknowledged write
                        survives a crash; one process at a time per DIR. Without it the data
                        is in memory and lost on exit
  --host H              address to listen on (default 127.0.0.1)
  --replica-set NAME    name of the single-member replica set it presents (default rs0)
  --standalone          present a standalone server instead: no change streams, no retryable writes
  --enable-test-commands
                        MongoDB's test commands (configureFailPoint with the failCommand fail
                        point), as mongod's enableTestCommands; for fault tests, never in production`;

/** Arguments the engine cannot start with: one line each, the user's to fix (a command exits 2). */
export class EngineArgumentsError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('; '));
    this.name = 'EngineArgumentsError';
  }
}

/**
 * Starts the engine as `values` say. Bad arguments are an `EngineArgumentsError` listing every
 * problem; a port already in use is one line, `port N on HOST is already in use`. Answers the
 * server and the line that announces it: print that once the caller is ready to be stopped, since
 * whoever reads it may signal the process at once.
 */
export async function startEngine(values: EngineArguments): Promise<{ server: EmbeddedServer; announcement: string }> {
  const problems: string[] = [];
  if (values.port === undefined) problems.push('--port is required, e.g. --port 27017 (see --help)');
  else if (!/^[0-9]{1,5}$/.test(values.port) || Number(values.port) > 65535)
    problems.push(`--port must be a whole number from 0 to 65535, not "${values.port}"`);
  if (!values.standalone && values['replica-set'].length === 0) problems.push('--replica-set needs a name (see --help)');
  if (values['data-dir']?.trim() === '') problems.push('--data-dir needs a directory (see --help)');
  if (problems.length > 0) throw new EngineArgumentsError(problems);
  const port = Number(values.port);
  const { host, standalone, 'data-dir': dataDir, 'enable-test-commands': enableTestCommands } = values;
  const server = await startEmbeddedServer({
    host,
    port,
    replicaSet: standalone ? false : values['replica-set'],
    enableTestCommands,
    dataDir,
  }).catch((error: unknown) => {
    throw (error as NodeJS.ErrnoException).code === 'EADDRINUSE' ? new Error(`port ${port} on ${host} is already in use`) : error;
  });
  const topology =
    (standalone ? 'standalone' : `replica set ${values['replica-set']}`) + (enableTestCommands ? ', test commands enabled' : '');
  const keeping = dataDir === undefined ? 'in memory; data is lost on exit' : `data kept in ${dataDir}`;
  return { server, announcement: `Embedded MongoDB-compatible engine (${topology}) listening on ${server.uri} (${keeping})` };
}
