import { parseArgs } from 'node:util';
import { loadConfig } from '../config.js';
import { createLogger } from '../logger.js';
import { createSidecarApp } from '../rest/sidecar.js';

// npm run sidecar -- --port N --upstream URL [--host H] [--timeout-ms MS]
const { values } = parseArgs({
  options: {
    port: { type: 'string' },
    host: { type: 'string' },
    upstream: { type: 'string' },
    'timeout-ms': { type: 'string', default: '5000' },
  },
});
const config = loadConfig();
const logger = createLogger(config);
const port = Number(values.port ?? config.port);
const timeoutMs = Number(values['timeout-ms']);
if (!values.upstream || !URL.canParse(values.upstream) || !Number.isInteger(port) || !(timeoutMs > 0)) {
  process.stderr.write('usage: npm run sidecar -- --port N --upstream http://HOST:PORT/graphql [--host H] [--timeout-ms MS]\n');
  process.exit(1);
}
const upstream = new URL(values.upstream);
const app = createSidecarApp({
  upstream,
  timeoutMs,
  trustProxy: config.trustProxy,
  corsOrigins: config.corsOrigins,
  basePath: config.restBasePath,
  logger,
});
const server = app.listen(port, values.host ?? config.host, () => {
  process.stdout.write(`REST sidecar listening on port ${port}, forwarding to ${upstream.href}\n`);
});
server.on('error', (error) => {
  process.stderr.write(`sidecar failed to start: ${error.message}\n`);
  process.exit(1);
});
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    server.close(() => process.exit(0));
    server.closeIdleConnections();
  });
}
