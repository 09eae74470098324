import { runCommand, stopOnSignals } from './cli/command.js';

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
    // Loaded only to serve: --help answers without loading the service.
    const [
      { banner, embeddedDatabase, subscriptionDoors },
      { loadConfig },
      { describeMongodbUri },
      { createLogger },
      { DEMO_USER_ID },
      { startService },
    ] = await Promise.all([
      import('./banner.js'),
      import('./config.js'),
      import('./db/uri.js'),
      import('./logger.js'),
      import('./seed/demo-data.js'),
      import('./service.js'),
    ]);
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
    // Credentials never reach a log line: the demo token is on the banner only, for the person who started it.
    logger.info(
      {
        url: service.url,
        host: config.host,
        database,
        deployment: config.deployment,
        playground: config.playground,
        subscriptions: subscriptionDoors(service),
        traces: config.tracing?.protocol ?? 'off',
        demoUser: service.demoToken === undefined ? undefined : DEMO_USER_ID,
      },
      'listening',
    );
    if (service.embeddedUri && !service.dataDir && config.production) {
      logger.warn('NODE_ENV=production on the in-memory embedded engine: every write is lost when the process exits; set MONGODB_URI');
    }
    process.stderr.write(banner(config, service, database));
  },
});
