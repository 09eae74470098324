import { parseArgs } from 'node:util';
import { startEmbeddedServer } from '../db/embedded/server.js';

/** `npm run embedded-db -- --port N [--host H]`: the embedded MongoDB-compatible engine on its own. */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '27017' },
      host: { type: 'string', default: '127.0.0.1' },
    },
  });
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`--port must be an integer from 0 to 65535, got "${values.port}"`);
    process.exit(2);
  }
  const server = await startEmbeddedServer({ host: values.host, port });
  console.log(`Embedded MongoDB-compatible engine listening on ${server.uri} (in memory; data is lost on exit)`);

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
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
