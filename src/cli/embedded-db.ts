import { ENGINE_OPTIONS, ENGINE_OPTIONS_HELP, EngineArgumentsError, startEngine } from '@chat-gateway/embedded-mongodb';

import { InvalidInput } from '../invalid-input.js';
import { runCommand, stopOnSignals } from './command.js';

const USAGE = `Usage: npm run embedded-db -- --port N [--data-dir DIR] [--host H] [--replica-set NAME | --standalone] [--enable-test-commands]

Runs the embedded MongoDB-compatible engine alone and prints its connection string
once it accepts connections; stops cleanly on SIGINT or SIGTERM. Its --data-dir is
what DATA_DIR is to npm start.
${ENGINE_OPTIONS_HELP}`;

await runCommand({
  name: 'embedded-db',
  usage: USAGE,
  options: ENGINE_OPTIONS,
  async run({ values }) {
    const { server, announcement } = await startEngine(values).catch((error: unknown) => {
      throw error instanceof EngineArgumentsError ? new InvalidInput(error.problems) : error;
    });
    // Before it says it listens: whoever reads that may signal it at once.
    stopOnSignals('embedded-db', () => server.close());
    console.log(announcement);
  },
});
