import type { Config } from './config.js';
import { GRAPHQL_PATH, SSE_PATH } from './http/route-paths.js';
import { legacyRoutes } from './rest/routes.js';
import { DEMO_USER_ID } from './seed/demo-data.js';
import type { RunningService } from './service.js';

/** What the banner tells of a started service. */
export type Banner = Pick<RunningService, 'url' | 'embeddedUri' | 'dataDir' | 'demoToken' | 'subscriptions'>;

/** For the person who started it, on stderr: stdout holds only JSON log lines. */
export function banner(config: Config, service: Banner, database: string): string {
  const { url, demoToken } = service;
  const [firstDoor = '', ...otherDoors] = subscriptionDoors(service);
  const lines = [
    '',
    `chat-gateway listening on ${url} (deployment: ${config.deployment}${config.production ? ', production' : ''})`,
    ...wildcardLine(config.host),
    `  GraphQL           ${url}/graphql${config.playground ? '  (playground: open it in a browser)' : ''}`,
    `  REST              ${url}${legacyRoutes.map((route) => route.path).join(', ')}` +
      (config.restBasePath ? ` (also under ${config.restBasePath})` : '') +
      (config.deployment === 'official' ? '' : ' (buy and package: not available on community)'),
    `  OpenAPI           ${url}/openapi.json`,
    `  health, metrics   ${url}/healthz, /readyz, /metrics${config.metricsToken ? ' (with the bearer METRICS_TOKEN)' : ''}`,
    `  database          ${database}`,
    `  subscriptions     ${firstDoor}`,
    ...otherDoors.map((door) => `                    ${door}`),
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

/** Where subscriptions are served, one line per transport, or why they are not. */
export function subscriptionDoors({ url, subscriptions }: Pick<Banner, 'url' | 'subscriptions'>): string[] {
  if (!subscriptions.available) return [`NOT available: ${subscriptions.reason}; everything else works`];
  return [
    `${url.replace(/^http/, 'ws')}${GRAPHQL_PATH} (WebSocket, graphql-transport-ws)`,
    `${url}${SSE_PATH} (Server-Sent Events, graphql-sse)`,
    `POST ${url}${GRAPHQL_PATH} with Accept: multipart/mixed;subscriptionSpec="1.0" (multipart HTTP, as Apollo Client subscribes)`,
  ];
}

/**
 * The truth about a wildcard HOST (the default): the URL shown is this machine's own way in, but
 * every address of the machine listens, so other machines reach the service too.
 */
function wildcardLine(host: string): string[] {
  return host === '0.0.0.0' || host === '::'
    ? [`  bound to          ${host}: every address of this machine, reachable from other machines (HOST=127.0.0.1 keeps it to this one)`]
    : [];
}

/** The embedded engine, and where its data lasts. */
export function embeddedDatabase({ dataDir }: Pick<Banner, 'dataDir'>): string {
  return dataDir ? `embedded engine (in this process), data kept in ${dataDir}` : 'embedded engine (in memory, in this process)';
}
