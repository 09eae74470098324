#!/usr/bin/env node
import { parseArgs } from 'node:util';

import { startEmbeddedServer } from './server.js';

const USAGE = `Usage: embedded-mongodb --port N [--data-dir DIR] [--host H] [--replica-set NAME | --standalone] [--enable-test-commands]

Runs the embedded MongoDB-compatible engine and prints its connection string once
it accepts connections.

  --port N              TCP port, required (27017 is MongoDB's usual one; 0 picks a free one)
  --data-dir DIR        keep the data in DIR (created if missing): every acknowledged write
                        survives a crash; one process at a time per DIR. Without it the data
                        is in memory and lost on exit
  --host H              address to listen on (default 127.0.0.1)
  --replica-set NAME    name of the single-member replica set it presents (default rs0)
  --standalone          present a standalone server instead: no change streams, no retryable writes
  --enable-test-commands
                        MongoDB's test commands (configureFailPoint with the failCommand fail
                        point), as mongod's enableTestCommands; for fault tests, never in production
  --help                this text`;

/** Bad arguments: one line, exit code 2, as every command of the project reports them. */
function fail(message: string): never {
  console.error(`embedded-mongodb: ${message}`);
  process.exit(2);
}

async function main(): Promise<void> {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        port: { type: 'string' },
        'data-dir': { type: 'string' },
        host: { type: 'string', default: '127.0.0.1' },
        'replica-set': { type: 'string', default: 'rs0' },
        standalone: { type: 'boolean', default: false },
        'enable-test-commands': { type: 'boolean', default: false },
        help: { type: 'boolean', default: false },
      },
    }));
  } catch (error) {
    // parseArgs goes on about values starting with '-': its first sentence is the point.
    fail(`${(error as Error).message.split(/\.\s/)[0]} (see --help)`);
  }
  if (values.help) {
    console.log(USAGE);
    return;
  }
  if (!values.standalone && values['replica-set'].length === 0) fail('--replica-set needs a name (see --help)');
  if (values.port === undefined) fail('--port is required, e.g. --port 27017 (see --help)');
  const port = Number(values.port);
  if (!/^[0-9]{1,5}$/.test(values.port) || port > 65535) fail(`--port must be a whole number from 0 to 65535, not "${values.port}"`);

  if (values['data-dir']?.trim() === '') fail('--data-dir needs a directory (see --help)');
  const dataDir = values['data-dir'];
  const enableTestCommands = values['enable-test-commands'];
  const server = await startEmbeddedServer({
    host: values.host,
    port,
    replicaSet: values.standalone ? false : values['replica-set'],
    enableTestCommands,
    dataDir,
  }).catch((error: unknown) => {
    throw (error as NodeJS.ErrnoException).code === 'EADDRINUSE' ? new Error(`port ${port} on ${values.host} is already in use`) : error;
  });
  const topology =
    (values.standalone ? 'standalone' : `replica set ${values['replica-set']}`) + (enableTestCommands ? ', test commands enabled' : '');

  // Before it says it listens: whoever reads that may signal it at once.
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  const keeping = dataDir === undefined ? 'in memory; data is lost on exit' : `data kept in ${dataDir}`;
  console.log(`Embedded MongoDB-compatible engine (${topology}) listening on ${server.uri} (${keeping})`);
}

main().catch((error: unknown) => {
  console.error(`embedded-mongodb: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
