import { loadSidecarConfig } from '../config.js';
import { InvalidInput } from '../invalid-input.js';
import { createLogger } from '../logger.js';
import { startSidecar } from '../rest/sidecar.js';
import { parsePort, runCommand, stopOnSignals } from './command.js';

const USAGE = `Usage: npm run sidecar -- --upstream URL [--port N] [--host H] [--timeout-ms MS]

The legacy REST layer alone, in front of a gateway's GraphQL endpoint: each request runs its
operation at URL with the caller's Authorization and X-Request-Id. Serves the same bodies as the
gateway, /openapi.json, /healthz, /readyz (the upstream answers) and /metrics.
  --upstream URL    the GraphQL endpoint, e.g. http://127.0.0.1:4000/graphql; it must answer
                    a GraphQL request at start
  --port N          port to listen on (default: PORT, else 4000; 0 picks a free one)
  --host H          address to listen on (default: HOST, else 0.0.0.0)
  --timeout-ms MS   how long to wait for the upstream before answering 503 (default 5000)
Reads PORT, HOST, NODE_ENV, LOG_LEVEL, METRICS_TOKEN, TRUST_PROXY, CORS_ORIGINS, REST_BASE_PATH,
SHUTDOWN_DELAY_MS, RESPONSE_MAX_BYTES (the most of an upstream answer it reads) and the OTEL_*
variables (traces) as the gateway does. Exit codes: 0 stopped, 1 failed (upstream unreachable,
port in use), 2 bad arguments or configuration.`;

await runCommand({
  name: 'sidecar',
  usage: USAGE,
  options: {
    upstream: { type: 'string' },
    port: { type: 'string' },
    host: { type: 'string' },
    'timeout-ms': { type: 'string', default: '5000' },
  },
  async run({ values }) {
    if (values.upstream === undefined) throw new InvalidInput(['--upstream is required (see --help)']);
    if (!/^https?:\/\//.test(values.upstream) || !URL.canParse(values.upstream)) {
      throw new InvalidInput([`--upstream must be an http(s) URL such as http://127.0.0.1:4000/graphql, not "${values.upstream}"`]);
    }
    if (values.port !== undefined) parsePort(values.port);
    if (!/^[1-9][0-9]{0,6}$/.test(values['timeout-ms'])) {
      throw new InvalidInput([`--timeout-ms must be a whole number of milliseconds, not "${values['timeout-ms']}"`]);
    }

    const config = loadSidecarConfig({ port: values.port, host: values.host });
    const logger = createLogger(config);
    const upstream = new URL(values.upstream);
    const sidecar = await startSidecar({ config, upstream, timeoutMs: Number(values['timeout-ms']), logger });
    // Before it says it listens: whoever reads that may signal it at once.
    stopOnSignals('sidecar', async (signal) => {
      logger.info({ signal, delayMs: config.shutdownDelayMs }, 'stopping: not ready, still serving until the delay is over');
      await sidecar.stop();
      logger.info('stopped');
    });
    logger.info({ url: sidecar.url, host: config.host, port: config.port, upstream: upstream.href }, 'listening');
    process.stderr.write(
      `\nREST sidecar listening on ${config.host} port ${new URL(sidecar.url).port} (${sidecar.url}), forwarding to ${upstream.href}\n` +
        `  REST ${sidecar.url}/conversation/list …   OpenAPI ${sidecar.url}/openapi.json   health ${sidecar.url}/healthz, /readyz   metrics ${sidecar.url}/metrics\n\n`,
    );
  },
});
