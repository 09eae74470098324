import { METHODS } from 'node:http';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { MAX_UNKNOWN_OPERATION_NAMES } from '../../src/observability/request-labels.js';
import { legacyRoutes } from '../../src/rest/routes.js';
import { send } from '../security/http.js';
import { graphql, startTestGateway, type TestGateway } from '../support/gateway.js';
import { sample, scrapeMetrics } from '../support/metrics.js';

const METRICS_TOKEN = 'metrics-token-0123456789';

let gateway: TestGateway;
let authorization: string;

beforeAll(async () => {
  // As in production: without the driver's command events (tracing off), which the command metrics do not need.
  gateway = await startTestGateway({}, { monitorDatabaseCommands: false });
  await gateway.seed({
    users: [{ id: 1, username: 'alice', quota: 12.5 }],
    conversations: [{ userId: 1, id: 1, name: 'Trip plan', model: 'gpt-4o', enableWeb: false, messages: [] }],
  });
  authorization = `Bearer ${await gateway.token(1)}`;
});
afterAll(() => gateway?.stop());

/** Runs `work` and answers how much the sample grew meanwhile. */
async function growth(name: string, labels: Record<string, string>, work: () => Promise<unknown>): Promise<number> {
  const before = sample(await scrapeMetrics(gateway.url), name, labels);
  await work();
  return sample(await scrapeMetrics(gateway.url), name, labels) - before;
}

const get = (path: string) => fetch(`${gateway.url}${path}`, { headers: { authorization } });

describe('GET /metrics', () => {
  it('serves Prometheus text without credentials when no METRICS_TOKEN is set', async () => {
    const response = await fetch(`${gateway.url}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await response.text();
    expect(text).toContain('# TYPE http_requests_total counter');
    expect(text).toContain('# TYPE graphql_operation_duration_seconds histogram');
  });

  it('counts and times HTTP requests by route pattern and status, never by raw URL', async () => {
    const labels = { method: 'GET', route: '/conversation/load', status: '200' };
    const before = await scrapeMetrics(gateway.url);
    await get('/conversation/load?id=1');
    await get('/conversation/load?id=987654');
    await get('/no/such/path-4242');
    const after = await scrapeMetrics(gateway.url);

    expect(sample(after, 'http_requests_total', labels) - sample(before, 'http_requests_total', labels)).toBe(2);
    expect(
      sample(after, 'http_request_duration_seconds_count', labels) - sample(before, 'http_request_duration_seconds_count', labels),
    ).toBe(2);
    const unmatched = { method: 'GET', route: '(unmatched)', status: '404' };
    expect(sample(after, 'http_requests_total', unmatched) - sample(before, 'http_requests_total', unmatched)).toBe(1);
    expect(after).not.toContain('987654');
    expect(after).not.toContain('path-4242');
  });

  it('labels /graphql requests with the endpoint, whatever the answer', async () => {
    const labels = { method: 'POST', route: '/graphql', status: '401' };
    expect(await growth('http_requests_total', labels, () => graphql(gateway, '{ quota }'))).toBe(1);
  });

  it('counts GraphQL operations by name and type, from /graphql and from the REST layer alike', async () => {
    const named = { operation_name: 'MyBalance', operation_type: 'query', result: 'success' };
    expect(await growth('graphql_operations_total', named, () => graphql(gateway, 'query MyBalance { quota }', { authorization }))).toBe(1);
    // Its first request comes after the flood has used up the budget of made-up names.
    const rest = { operation_name: 'ListConversations', operation_type: 'query', result: 'success' };
    expect(await growth('graphql_operations_total', rest, () => get('/conversation/list'))).toBe(1);
    const duration = { operation_name: 'LoadConversation', operation_type: 'query' };
    expect(await growth('graphql_operation_duration_seconds_count', duration, () => get('/conversation/load?id=1'))).toBe(1);
  });

  it('counts errors by code, and operations that never resolved apart from named ones', async () => {
    const text = await scrapeMetrics(gateway.url);
    const invalid = { operation_name: '(unresolved)', operation_type: 'unknown', result: 'error' };
    const before = [
      sample(text, 'graphql_errors_total', { code: 'GRAPHQL_VALIDATION_FAILED' }),
      sample(text, 'graphql_operations_total', invalid),
    ];
    const { status } = await graphql(gateway, '{ noSuchField }', { authorization });
    expect(status).toBe(400);
    const after = await scrapeMetrics(gateway.url);
    expect(sample(after, 'graphql_errors_total', { code: 'GRAPHQL_VALIDATION_FAILED' }) - before[0]!).toBe(1);
    expect(sample(after, 'graphql_operations_total', invalid) - before[1]!).toBe(1);
  });

  it('reports the database as up, and counts and times its commands by name with the driver command events off', async () => {
    const text = await scrapeMetrics(gateway.url);
    expect(sample(text, 'mongodb_up')).toBe(1);
    const load = () => get('/conversation/load?id=1');
    expect(await growth('mongodb_commands_total', { command: 'find', result: 'success' }, load)).toBe(1);
    expect(await growth('mongodb_command_duration_seconds_count', { command: 'find' }, load)).toBe(1);
    expect(
      await growth('mongodb_commands_total', { command: 'delete', result: 'success' }, () =>
        fetch(`${gateway.url}/conversation/delete?id=99`, { headers: { authorization } }),
      ),
    ).toBe(1);
    // The driver builds no command events here: they would cost every command.
    expect(gateway.database.connection.getClient().options.monitorCommands).toBe(false);
  });

  it('includes the process metrics', async () => {
    const text = await scrapeMetrics(gateway.url);
    for (const name of [
      'process_cpu_user_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_eventloop_lag_seconds',
      'nodejs_heap_size_used_bytes',
    ]) {
      expect(text).toContain(`# TYPE ${name} `);
    }
  });
});

describe('GET /metrics with METRICS_TOKEN set', () => {
  let protectedGateway: TestGateway;

  beforeAll(async () => {
    protectedGateway = await startTestGateway({ METRICS_TOKEN });
  });
  afterAll(() => protectedGateway?.stop());

  it('refuses a scrape without the token, or with another one, with 401', async () => {
    const attempts: Record<string, string>[] = [{}, { authorization: 'Bearer not-the-token' }, { authorization: METRICS_TOKEN }];
    for (const headers of attempts) {
      const response = await fetch(`${protectedGateway.url}/metrics`, { headers });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(await response.text()).not.toContain('http_requests_total');
    }
  });

  it('serves the metrics to `Authorization: Bearer <token>`', async () => {
    expect(await scrapeMetrics(protectedGateway.url, METRICS_TOKEN)).toContain('# TYPE http_requests_total counter');
  });

  it('keeps its counts apart from another gateway in the same process', async () => {
    const labels = { method: 'GET', route: '/healthz', status: '200' };
    const before = sample(await scrapeMetrics(protectedGateway.url, METRICS_TOKEN), 'http_requests_total', labels);
    expect(await growth('http_requests_total', labels, () => fetch(`${gateway.url}/healthz`))).toBe(1);
    expect(sample(await scrapeMetrics(protectedGateway.url, METRICS_TOKEN), 'http_requests_total', labels)).toBe(before);
  });
});

describe('GET /metrics in production', () => {
  it('is not served without METRICS_TOKEN, and only to its bearer with it', async () => {
    const [open, closed] = await Promise.all([
      startTestGateway({ NODE_ENV: 'production' }),
      startTestGateway({ NODE_ENV: 'production', METRICS_TOKEN }),
    ]);
    try {
      const unserved = await fetch(`${open.url}/metrics`);
      expect(unserved.status).toBe(404);
      expect(await unserved.text()).not.toContain('http_requests_total');
      expect((await fetch(`${closed.url}/metrics`)).status).toBe(401);
      expect(await scrapeMetrics(closed.url, METRICS_TOKEN)).toContain('# TYPE http_requests_total counter');
    } finally {
      await Promise.all([open.stop(), closed.stop()]);
    }
  });
});

describe('operation names chosen by callers', () => {
  /** Every distinct `operation_name` label value in the scrape. */
  const operationNames = (text: string) => new Set([...text.matchAll(/operation_name="([^"]*)"/g)].map((match) => match[1]!));

  it('keep /metrics small whatever callers send: names cut to 64 characters, and at most 50 made-up ones', async () => {
    // The audit's flood: 200 distinct operation names, each tens of kilobytes long.
    const padding = 'x'.repeat(20_000);
    for (let batch = 0; batch < 200; batch += 20) {
      await Promise.all(
        Array.from({ length: 20 }, (_, index) => graphql(gateway, `query N${batch + index}_${padding} { quota }`, { authorization })),
      );
    }
    const text = await scrapeMetrics(gateway.url);
    const names = operationNames(text);
    for (const name of names) expect(name.length).toBeLessThanOrEqual(64);
    const madeUp = [...names].filter((name) => name.startsWith('N'));
    expect(madeUp.length).toBeLessThanOrEqual(MAX_UNKNOWN_OPERATION_NAMES);
    expect(names).toContain('other');
    expect(sample(text, 'graphql_operations_total', { operation_name: 'other', result: 'success' })).toBeGreaterThanOrEqual(150);
    // 8 kB before any request; a few hundred kB at most now, where the flood made it 317 MB before names were bounded.
    expect(Buffer.byteLength(text)).toBeLessThan(400_000);
  });

  it('never crowd out the operations known at start: the REST layer’s keep their own label', async () => {
    // Its first request comes after the flood has used up the budget of made-up names.
    const rest = { operation_name: 'ListConversations', operation_type: 'query', result: 'success' };
    expect(await growth('graphql_operations_total', rest, () => get('/conversation/list'))).toBe(1);
  });
});

describe('paths spelled by callers', () => {
  let spelled: TestGateway;

  beforeAll(async () => {
    spelled = await startTestGateway({ REST_BASE_PATH: '/api' });
  });
  afterAll(() => spelled?.stop());

  /** Every distinct `route` label value in the scrape. */
  const routeLabels = (text: string) => new Set([...text.matchAll(/route="([^"]*)"/g)].map((match) => match[1]!));
  /** Every spelling of `path` that changes the case of its letters. */
  const everyCase = (path: string) =>
    Array.from({ length: 2 ** path.replace(/[^a-z]/g, '').length }, (_, variant) => {
      let letter = 0;
      return path.replace(/[a-z]/g, (character) => ((variant >> letter++) & 1 ? character.toUpperCase() : character));
    });
  /** Two other spellings of `path`: in capitals, and in alternating case with a trailing slash. */
  const otherCases = (path: string) => [
    path.toUpperCase(),
    `${[...path].map((character, index) => (index % 2 ? character.toUpperCase() : character)).join('')}/`,
  ];

  it('name each request after the route it matched, so 34 methods × 128 spellings of /graphql add no label', async () => {
    const legacyPaths = legacyRoutes.flatMap(({ path }) => [path, `/api${path}`]);
    const others = [...legacyPaths, '/healthz', '/readyz', '/metrics', '/openapi.json', '/playground/assets/playground.js'];
    const spellings = [...everyCase('/graphql'), ...others.flatMap(otherCases)];
    expect(spellings.filter((path) => path.toLowerCase() === '/graphql')).toHaveLength(128);
    // CONNECT opens a tunnel rather than asking for a path: Node hands it to no request handler.
    const methods = METHODS.filter((method) => method !== 'CONNECT');
    expect(methods).toHaveLength(34);
    for (const method of methods) await Promise.all(spellings.map((path) => send(spelled.url, { method, path })));

    const labels = routeLabels(await scrapeMetrics(spelled.url));
    const declared = new Set(['/graphql', ...legacyPaths, '/healthz', '/readyz', '/metrics', '/openapi.json', '/playground/assets/:file']);
    expect([...labels].filter((label) => !declared.has(label) && label !== '(unmatched)')).toEqual([]);
    expect(labels).toContain('/graphql');
    expect(labels).toContain('/api/quota');
  }, 90_000);
});
