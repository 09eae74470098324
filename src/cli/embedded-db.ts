import { startEmbeddedServer } from '@chat-gateway/embedded-mongodb';

import { InvalidInput } from '../invalid-input.js';
import { parsePort, runCommand, stopOnSignals } from './command.js';

const USAGE = `Usage: npm run embedded-db -- --port N [--data-dir DIR] [--host H] [--replica-set NAME | --standalone] [--enable-test-commands]

Runs the embedded MongoDB-compatible engine alone and prints its connection string
once it accepts connections; stops cleanly on SIGINT or SIGTERM.
  --port N              TCP port, required (27017 is MongoDB's usual one; 0 picks a free one)
  --data-dir DIR        keep the data in DIR (created if missing), as DATA_DIR does for npm start:
                        every acknowledged write survives a crash; one process at a time per DIR.
                        Without it the data is in memory and lost on exit
  --host H              address to listen on (default 127.0.0.1)
  --replica-set NAME    name of the single-member replica set it presents (default rs0)
  --standalone          present a standalone server instead: no change streams, no retryable writes
  --enable-test-commands
                        MongoDB's test commands (configureFailPoint with the failCommand fail
                        point), as mongod's enableTestCommands; for fault tests, never in production`;

await runCommand({
  name: 'embedded-db',
  usage: USAGE,
  options: {
    port: { type: 'string' },
    'data-dir': { type: 'string' },
    host: { type: 'string', default: '127.0.0.1' },
    'replica-set': { type: 'string', default: 'rs0' },
    standalone: { type: 'boolean', default: false },
    'enable-test-commands': { type: 'boolean', default: false },
  },
  async run({ values }) {
    const problems: string[] = [];
    if (values.port === undefined) problems.push('--port is required, e.g. --port 27017 (see --help)');
    if (!values.standalone && values['replica-set'].length === 0) problems.push('--replica-set needs a name (see --help)');
    if (values['data-dir']?.trim() === '') problems.push('--data-dir needs a directory (see --help)');
    if (problems.length > 0) throw new InvalidInput(problems);
    const port = parsePort(values.port!);
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
    // Before it says it listens: whoever reads that may signal it at once.
    stopOnSignals('embedded-db', () => server.close());
    const topology =
      (values.standalone ? 'standalone' : `replica set ${values['replica-set']}`) + (enableTestCommands ? ', test commands enabled' : '');
    const keeping = dataDir === undefined ? 'in memory; data is lost on exit' : `data kept in ${dataDir}`;
    console.log(`Embedded MongoDB-compatible engine (${topology}) listening on ${server.uri} (${keeping})`);
  },
});
