// Preloaded with `node --import` by tests: prints `loaded module: WHERE` on stderr for each module
// of an @opentelemetry package the process loads: ESM imports as the loader resolves them, and
// CommonJS ones (which Node 20's loader hooks do not see) from the require cache when it exits.
import { createRequire, register } from 'node:module';
import { MessageChannel } from 'node:worker_threads';

const report = (where) => process.stderr.write(`loaded module: ${where}\n`);
const { port1, port2 } = new MessageChannel();
port1.on('message', report);
port1.unref();
register('./loaded-modules-hooks.mjs', import.meta.url, { data: { port: port2 }, transferList: [port2] });

const { cache } = createRequire(import.meta.url);
process.on('exit', () =>
  Object.keys(cache)
    .filter((file) => file.includes('/@opentelemetry/'))
    .forEach(report),
);
