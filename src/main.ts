import { runCommand, stopOnSignals } from './cli/command.js';
import { type Config, loadConfig } from './config.js';
import { describeMongodbUri } from './db/uri.js';
import { createLogger } from './logger.js';
import { legacyRoutes } from './rest/routes.js';
import { DEMO_USER_ID } from './seed/demo-data.js';
import { type RunningService, startService } from './service.js';

const USAGE = `Usage: npm start   (or: node dist/main.js)

Serves GraphQL at /graphql, the legacy REST endpoints, /openapi.json, /healthz, /readyz
and /metrics. Configured by environment variables, also read from .env in the working
directory (variables already set win); .env.example lists every one with its default.
Without MONGODB_URI it runs the embedded engine, keeping its data in DATA_DIR (.data),
with demo data and a demo token in a new data directory.
Logs are JSON lines on stdout; the banner and failures to start go to stderr.
Stops cleanly on SIGTERM or SIGINT (SHUTDOWN_DELAY_MS). Exit codes: 0 stopped,
1 failed (database unreachable, port in use), 2 bad configuration or seed file.`;

await runCommand({
  name: 'chat-gateway',
  usage: USAGE,
  options: {},
  async run() {
    const config = loadConfig();
    const logger = createLogger(config);
    const service = await startService(config, logger);
    // Before it says it listens: whoever reads that may signal it at once.
    stopOnSignals('chat-gateway', async (signal) => {
      logger.info({ signal, delayMs: config.shutdownDelayMs }, 'stopping: not ready, still serving until the delay is over');
      await service.stop();
      logger.info('stopped');
    });
    const database = service.embeddedUri ? embeddedDatabase(service) : describeMongodbUri(config.mongodbUri!);
    logger.info(
      {
        url: service.url,
        database,
        deployment: config.deployment,
        playground: config.playground,
        subscriptions: subscriptionsLine(service),
        traces: config.tracing?.protocol ?? 'off',
        demoToken: service.demoToken,
      },
      'listening',
    );
    if (service.embeddedUri && !service.dataDir && config.production) {
      logger.warn('NODE_ENV=production on the in-memory embedded engine: every write is lost when the process exits; set MONGODB_URI');
    }
    process.stderr.write(banner(config, service, database));
  },
});

/** For the person who started it, on stderr: stdout holds only JSON log lines. */
function banner(config: Config, service: RunningService, database: string): string {
  const { url, demoToken } = service;
  const lines = [
    '',
    `chat-gateway listening on ${url} (deployment: ${config.deployment}${config.production ? ', production' : ''})`,
    `  GraphQL           ${url}/graphql${config.playground ? '  (playground: open it in a browser)' : ''}`,
    `  REST              ${url}${legacyRoutes.map((route) => route.path).join(', ')}` +
      (config.restBasePath ? ` (also under ${config.restBasePath})` : '') +
      (config.deployment === 'official' ? '' : ' (buy and package: not available on community)'),
    `  OpenAPI           ${url}/openapi.json`,
    `  health, metrics   ${url}/healthz, /readyz, /metrics${config.metricsToken ? ' (with the bearer METRICS_TOKEN)' : ''}`,
    `  database          ${database}`,
    `  subscriptions     ${subscriptionsLine(service)}`,
  ];
  if (config.tracing)
    lines.push(`  traces            OpenTelemetry over OTLP/HTTP (${config.tracing.protocol}), to the OTEL_EXPORTER_OTLP_* endpoint`);
  if (service.embeddedUri && !service.dataDir)
    lines.push('                    data is LOST when the process exits (DATA_DIR=memory); set MONGODB_URI for a lasting database');
  if (!demoToken && !config.jwtSecret) {
    lines.push(
      '',
      service.dataDir
        ? `Tokens are signed with the secret kept in ${service.dataDir}: npm run token -- --user ID signs one here.`
        : 'Tokens are signed with a secret made for this process: set JWT_SECRET to sign your own (npm run token).',
    );
  }
  if (demoToken) {
    lines.push(
      '',
      `Access token for demo user ${DEMO_USER_ID}${config.jwtSecret || service.dataDir ? '' : ' (random signing secret: set JWT_SECRET to keep tokens valid across restarts)'}:`,
      `  ${demoToken}`,
      'Try:',
      `  curl -H 'Authorization: Bearer ${demoToken}' ${url}/conversation/list`,
      `  curl -H 'Authorization: Bearer ${demoToken}' -H 'Content-Type: application/json' \\`,
      `       -d '{"query":"{ quota conversations(first: 2) { nodes { id number name } } }"}' ${url}/graphql`,
    );
  }
  return `${lines.join('\n')}\n\n`;
}

/** Where subscriptions are served, or why they are not. */
function subscriptionsLine({ url, subscriptions }: RunningService): string {
  return subscriptions.available
    ? `${url.replace(/^http/, 'ws')}/graphql (WebSocket, graphql-transport-ws)`
    : `NOT available: ${subscriptions.reason}; everything else works`;
}

/** The embedded engine, and where its data lasts. */
function embeddedDatabase({ dataDir }: RunningService): string {
  return dataDir ? `embedded engine (in this process), data kept in ${dataDir}` : 'embedded engine (in memory, in this process)';
}
