// Preloaded with `node --import` by tests: prints `loaded module: URL` on stderr for each module
// of an @opentelemetry package the process imports, as its module loader resolves it.
import { register } from 'node:module';
import { MessageChannel } from 'node:worker_threads';

const { port1, port2 } = new MessageChannel();
port1.on('message', (url) => process.stderr.write(`loaded module: ${url}\n`));
port1.unref();
register('./loaded-modules-hooks.mjs', import.meta.url, { data: { port: port2 }, transferList: [port2] });
