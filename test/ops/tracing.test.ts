import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { secretKey, signAccessToken } from '../../src/auth/access-token.js';
import type { SsoStub } from '../../src/sso-stub/stub-server.js';
import { NOT_CONFIRMED, officialProcessEnvironment, startStub } from '../billing/official.js';
import { startTestDatabase, type TestDatabase } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { TEST_JWT_SECRET } from '../support/gateway.js';
import { type NodeProcess, spawnNode } from '../support/node-process.js';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../support/otlp-receiver.js';
import { connectAs, type TestSocket } from '../support/websocket.js';

const SECRET_CONTENT = 'a message nobody but its author may read';
const API_KEY = 'sk-tess-tracing-0123456789abcdef';
/** Makes a gateway process print each @opentelemetry module it loads (see the file). */
const LOADED_MODULES = `--import=${pathToFileURL('test/support/loaded-modules.mjs').href}`;

interface GatewayProcess {
  process: NodeProcess;
  url: string;
}

let receiver: OtlpReceiver;
let stub: SsoStub;
let database: TestDatabase;
let scratch: string;
let seedFile: string;
let gateway: GatewayProcess;
let token: string;
const sockets: TestSocket[] = [];

async function startGatewayProcess(environment: Record<string, string>): Promise<GatewayProcess> {
  const process = spawnNode('dist/main.js', [], {
    ...officialProcessEnvironment(stub, database.uri, environment),
    NODE_OPTIONS: LOADED_MODULES,
  });
  const [, url] = (await process.waitFor(/listening on (http:\/\/[\d.:]+)/, { timeoutMs: 30_000, stream: 'stderr' })) as unknown as [
    string,
    string,
  ];
  return { process, url };
}

async function stopProcess(running: GatewayProcess | undefined): Promise<void> {
  if (running === undefined || running.process.child.exitCode !== null) return;
  running.process.child.kill('SIGTERM');
  await running.process.exited;
}

beforeAll(async () => {
  [receiver, stub, database] = await Promise.all([startOtlpReceiver(), startStub({ tess: { wallet: 100 } }), startTestDatabase()]);
  scratch = await mkdtemp(join(tmpdir(), 'tracing-'));
  seedFile = join(scratch, 'seed.json');
  const messages = [{ role: 'user', content: SECRET_CONTENT }];
  await writeFile(
    seedFile,
    JSON.stringify({
      users: [{ id: 7, username: 'tess', quota: 0, apiKeys: [API_KEY] }],
      conversations: [1, 2].map((id) => ({ userId: 7, id, name: `Chat ${id}`, model: 'gpt-4o', enableWeb: false, messages })),
    }),
  );
  gateway = await startGatewayProcess({
    SEED_FILE: seedFile,
    LOG_LEVEL: 'info',
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    // Spans leave within 20 ms of their end, so that the tests wait on what arrives rather than on a flush.
    OTEL_BSP_SCHEDULE_DELAY: '20',
  });
  token = await signAccessToken(secretKey(TEST_JWT_SECRET), 7);
});

afterAll(async () => {
  await Promise.all(sockets.map((socket) => socket.close()));
  await stopProcess(gateway);
  await Promise.all([receiver?.close(), stub?.close(), database?.stop()]);
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** The spans of one trace, once `complete` says all have arrived. */
function traceOf(
  traceId: string,
  complete: (spans: ReceivedSpan[]) => boolean = (spans) => spans.some(isServerSpan),
): Promise<ReceivedSpan[]> {
  return eventually(
    () => {
      const spans = receiver.spans().filter((span) => span.traceId === traceId);
      return complete(spans) ? spans : undefined;
    },
    10_000,
    `the spans of trace ${traceId}`,
  );
}

const isServerSpan = (span: ReceivedSpan) => span.kind === 'server';
const isPaymentCall = (span: ReceivedSpan) => span.attributes['url.path'] === '/app/payment';

/** A trace as an indented outline, `name (kind)` per span, children in name order: what a trace viewer shows. */
function outline(spans: ReceivedSpan[], parent?: string, depth = 0): string[] {
  return spans
    .filter((span) => span.parentSpanId === parent || (depth === 0 && !spans.some((other) => other.spanId === span.parentSpanId)))
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((span) => [`${'  '.repeat(depth)}${span.name} (${span.kind})`, ...outline(spans, span.spanId, depth + 1)]);
}

/** The request log line of the response's `X-Request-Id`. */
function logLineOf(response: Response): Promise<Record<string, unknown>> {
  const requestId = response.headers.get('x-request-id');
  return eventually(
    () =>
      gateway.process
        .stdout()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .find((line) => line.msg === 'request' && line.requestId === requestId),
    5_000,
    `the log line of request ${requestId}`,
  );
}

function traceparent(sampled = true): { header: string; traceId: string; spanId: string } {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { header: `00-${traceId}-${spanId}-${sampled ? '01' : '00'}`, traceId, spanId };
}

/** What a caller may put in the trace headers besides `traceparent`: vendor state, and 3 489 characters of baggage that claims a user. */
const CALLER_TRACESTATE = 'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7';
const BAGGAGE_ENTRIES = [
  'user=admin',
  ...Array.from({ length: 16 }, (_, index) => `k${String(index).padStart(2, '0')}=${'v'.repeat(196)}`),
].join(',');
const CALLER_BAGGAGE = `${BAGGAGE_ENTRIES},pad=${'v'.repeat(3_489 - BAGGAGE_ENTRIES.length - ',pad='.length)}`;

/** The provider's record of the payment made for a buy of `quota` points: its trace headers, as the provider received them. */
function paymentCallOf(quota: number, calls = stub.calls) {
  const payment = calls.findLast((call) => call.path === '/app/payment' && (call.body as { amount: number }).amount === quota / 10);
  expect(payment).toBeDefined();
  const { traceparent, tracestate, baggage } = payment!;
  return { traceparent, tracestate, baggage };
}

async function graphql(query: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${gateway.url}/graphql`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query }),
  });
}

describe('traces over OTLP/HTTP, with OTEL_EXPORTER_OTLP_ENDPOINT set', () => {
  it('makes a REST list one trace: the HTTP request, its GraphQL operation, and the operation’s database commands', async () => {
    const response = await fetch(`${gateway.url}/conversation/list`, { headers: { authorization: token } });
    expect(response.status).toBe(200);
    const { traceId, spanId } = await logLineOf(response);
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);

    const spans = await traceOf(String(traceId));
    expect(outline(spans)).toEqual([
      'GET /conversation/list (server)',
      '  query ListConversations (internal)',
      '    find conversations (client)',
    ]);
    const server = spans.find(isServerSpan)!;
    // The log line names the request's server span: logs and traces meet.
    expect(server.spanId).toBe(spanId);
    expect(server.parentSpanId).toBeUndefined();
    expect(server.service).toBe('chat-gateway');
    expect(server.attributes).toEqual({
      'http.request.method': 'GET',
      'url.scheme': 'http',
      'http.route': '/conversation/list',
      'http.response.status_code': 200,
    });
    expect(spans.find((span) => span.name === 'query ListConversations')?.attributes).toEqual({
      'gateway.door': 'rest',
      'graphql.operation.type': 'query',
      'graphql.operation.name': 'ListConversations',
    });
    expect(spans.find((span) => span.name === 'find conversations')?.attributes).toMatchObject({
      'db.system.name': 'mongodb',
      'db.operation.name': 'find',
      'db.collection.name': 'conversations',
      'db.namespace': database.dbName,
    });
  });

  it('continues the trace of a caller that sends traceparent', async () => {
    const caller = traceparent();
    const response = await graphql('query Quota { quota }', { traceparent: caller.header });
    expect(response.status).toBe(200);

    const spans = await traceOf(caller.traceId);
    const server = spans.find(isServerSpan)!;
    expect(server).toMatchObject({ name: 'POST /graphql', parentSpanId: caller.spanId });
    expect(spans.find((span) => span.name === 'query Quota')).toMatchObject({ parentSpanId: server.spanId });
    expect((await logLineOf(response)).traceId).toBe(caller.traceId);
  });

  it('continues a router’s trace as a federation subgraph: its _entities is one operation, with its one batched read', async () => {
    const subgraph = await startGatewayProcess({
      SEED_FILE: seedFile,
      FEDERATION_SUBGRAPH: 'true',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: '20',
    });
    const router = traceparent();
    try {
      const ids = [1, 2].map((number) => Buffer.from(`Conversation:7:${number}`).toString('base64url'));
      const response = await fetch(`${subgraph.url}/graphql`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', traceparent: router.header },
        body: JSON.stringify({
          query:
            'query Entities($representations: [_Any!]!) { _entities(representations: $representations) { ... on Conversation { name } } }',
          variables: { representations: ids.map((id) => ({ __typename: 'Conversation', id })) },
        }),
      });
      expect(await response.json()).toEqual({ data: { _entities: [{ name: 'Chat 1' }, { name: 'Chat 2' }] } });
      const spans = await traceOf(router.traceId);
      expect(outline(spans)).toEqual(['POST /graphql (server)', '  query Entities (internal)', '    find conversations (client)']);
      expect(spans.find(isServerSpan)?.parentSpanId).toBe(router.spanId);
    } finally {
      await stopProcess(subgraph);
    }
  });

  it('makes a GraphQL buy one trace whose call to the provider is a client span that sent the provider its traceparent', async () => {
    const caller = traceparent();
    const response = await graphql('mutation Buy { buy(quota: 20) { ok quota } }', { traceparent: caller.header });
    expect(await response.json()).toEqual({ data: { buy: { ok: true, quota: 20 } } });

    const spans = await traceOf(caller.traceId);
    const operation = spans.find((span) => span.name === 'mutation Buy')!;
    expect(operation).toMatchObject({ parentSpanId: spans.find(isServerSpan)!.spanId, attributes: { 'gateway.door': 'graphql' } });
    const children = spans.filter((span) => span.parentSpanId === operation.spanId);
    expect(children.filter((span) => span.attributes['db.system.name'] === 'mongodb').map((span) => span.name)).toEqual(
      expect.arrayContaining(['insert purchases', 'update users']),
    );
    const providerCall = children.find((span) => span.attributes['url.path'] === '/app/payment')!;
    expect(providerCall).toMatchObject({ name: 'POST', kind: 'client', attributes: { 'http.response.status_code': 200 } });
    const payment = stub.calls.find((call) => call.path === '/app/payment' && (call.body as { user: string }).user === 'tess');
    expect(payment?.traceparent).toBe(`00-${caller.traceId}-${providerCall.spanId}-01`);
  });

  it('sends the provider a traceparent of its own, a child of the caller’s trace, and none of the caller’s tracestate or baggage', async () => {
    expect(CALLER_BAGGAGE).toHaveLength(3_489);
    const caller = traceparent();
    const headers = { traceparent: caller.header, tracestate: CALLER_TRACESTATE, baggage: CALLER_BAGGAGE };
    const response = await graphql('mutation Buy { buy(quota: 40) { ok } }', headers);
    expect(await response.json()).toEqual({ data: { buy: { ok: true } } });

    const spans = await traceOf(caller.traceId, (received) => received.some(isServerSpan) && received.some(isPaymentCall));
    expect(spans.find(isServerSpan)).toMatchObject({ parentSpanId: caller.spanId });
    const providerCall = spans.find(isPaymentCall)!;
    expect(providerCall.spanId).not.toBe(caller.spanId);
    expect(paymentCallOf(40)).toEqual({
      traceparent: `00-${caller.traceId}-${providerCall.spanId}-01`,
      tracestate: undefined,
      baggage: undefined,
    });
  });

  it('decides itself whether a request is sampled: a caller’s unsampled trace is recorded, and the provider told so', async () => {
    const caller = traceparent(false);
    const response = await graphql('mutation Buy { buy(quota: 50) { ok } }', { traceparent: caller.header, tracestate: CALLER_TRACESTATE });
    expect(await response.json()).toEqual({ data: { buy: { ok: true } } });

    const spans = await traceOf(caller.traceId, (received) => received.some(isPaymentCall));
    const providerCall = spans.find(isPaymentCall)!;
    expect(paymentCallOf(50)).toEqual({
      traceparent: `00-${caller.traceId}-${providerCall.spanId}-01`,
      tracestate: undefined,
      baggage: undefined,
    });
  });

  it('makes each subscription event a trace of its own: its operation, and the reads it makes', async () => {
    const socket = await connectAs(gateway.url, `Bearer ${token}`);
    sockets.push(socket);
    const named = (span: ReceivedSpan) => span.name === 'subscription Events';
    const before = receiver.spans().filter(named).length;
    const events = socket.subscribe('subscription Events { conversationEvents { kind conversation { name } } }');
    // The subscribe message's own operation (its stream opened), before any event.
    await eventually(() => (receiver.spans().filter(named).length > before ? true : undefined), 10_000, 'the subscription’s span');

    for (const name of ['Renamed once', 'Renamed twice']) {
      await graphql(`mutation Rename { renameConversation(id: "Q29udmVyc2F0aW9uOjc6MQ", name: "${name}") { ok } }`);
      expect((await events.next()).payload).toEqual({ data: { conversationEvents: { kind: 'UPDATED', conversation: { name } } } });
    }
    const eventSpans = await eventually(
      () => {
        const spans = receiver
          .spans()
          .filter(named)
          .slice(before + 1);
        return spans.length === 2 ? spans : undefined;
      },
      10_000,
      'a span per event',
    );
    for (const event of eventSpans) {
      expect(event).toMatchObject({ parentSpanId: undefined, attributes: { 'gateway.door': 'websocket' } });
      const trace = receiver.spans().filter((span) => span.traceId === event.traceId);
      expect(outline(trace)).toEqual(['subscription Events (internal)', '  find conversations (client)']);
    }
    expect(new Set(eventSpans.map((span) => span.traceId)).size).toBe(2);
    // The change feed the subscription opened polls for the whole process: none of its commands is a span of that subscription.
    const subscribed = receiver.spans().filter(named)[before]!;
    expect(outline(receiver.spans().filter((span) => span.traceId === subscribed.traceId))).toEqual(['subscription Events (internal)']);
  });

  it('makes the settlement of a buy whose answer was lost a span linked to the buy, with the order id', async () => {
    stub.setFaults({ loseNextPaymentAnswers: 2 });
    const caller = traceparent();
    const response = await fetch(`${gateway.url}/buy`, {
      method: 'POST',
      headers: { authorization: token, 'content-type': 'application/json', traceparent: caller.header },
      body: JSON.stringify({ quota: 30 }),
    });
    expect(await response.text()).toBe(NOT_CONFIRMED);
    const buy = (await traceOf(caller.traceId)).find((span) => span.name === 'mutation Buy')!;
    const orderId = buy.attributes['gateway.order_id'];
    expect(orderId).toEqual(expect.any(String));

    const settlement = await eventually(
      () => receiver.spans().find((span) => span.name === 'settle purchase' && span.links.length > 0),
      10_000,
      'the settlement span',
    );
    expect(settlement).toMatchObject({
      parentSpanId: undefined,
      attributes: { 'gateway.order_id': orderId },
      links: [{ traceId: caller.traceId, spanId: buy.spanId }],
    });
    const statusCall = stub.calls.find((call) => call.path === '/app/payment/status' && (call.body as { order: string }).order === orderId);
    const [, traceId] = /^00-([0-9a-f]{32})-/.exec(statusCall?.traceparent ?? '') ?? [];
    expect(traceId).toBe(settlement.traceId);
  });

  it('makes a request through the sidecar one trace across both processes: the sidecar’s call upstream carries traceparent', async () => {
    const sidecar = spawnNode('dist/cli/sidecar.js', ['--upstream', `${gateway.url}/graphql`, '--port', '0', '--host', '127.0.0.1'], {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: '20',
      LOG_LEVEL: 'info',
    });
    try {
      const [, url] = (await sidecar.waitFor(/\((http:\/\/[\d.:]+)\)/, { stream: 'stderr' })) as unknown as [string, string];
      const caller = traceparent();
      const response = await fetch(`${url}/conversation/list`, { headers: { authorization: token, traceparent: caller.header } });
      expect(response.status).toBe(200);

      const spans = await traceOf(caller.traceId, (received) => received.filter(isServerSpan).length === 2);
      expect(outline(spans)).toEqual([
        'GET /conversation/list (server)',
        '  POST (client)',
        '    POST /graphql (server)',
        '      query ListConversations (internal)',
        '        find conversations (client)',
      ]);
      expect(spans.filter(isServerSpan).map((span) => span.service)).toEqual(
        expect.arrayContaining(['chat-gateway-sidecar', 'chat-gateway']),
      );
    } finally {
      sidecar.child.kill('SIGTERM');
      await sidecar.exited;
    }
  });

  it('records no credential, message content or query string in any span', async () => {
    await fetch(`${gateway.url}/conversation/load?id=1&key=${API_KEY}`, { headers: { authorization: token } });
    await fetch(`${gateway.url}/graphql?query=${encodeURIComponent('{ conversation(number: 1) { messages { content } } }')}`, {
      headers: { authorization: `Bearer ${token}`, 'apollo-require-preflight': 'true' },
    });
    const caller = traceparent();
    await graphql(
      `
        query Load {
          conversation(number: 2) {
            name
            messages {
              content
            }
          }
        }
      `,
      { traceparent: caller.header, 'x-api-key': API_KEY },
    );
    await traceOf(caller.traceId);

    const exported = JSON.stringify(receiver.spans());
    for (const secret of [token, API_KEY, SECRET_CONTENT, 'Bearer', '?id=', 'messages']) expect(exported).not.toContain(secret);
  });

  it('exports in protobuf, the exporters’ default encoding', () => {
    expect([...receiver.contentTypes()]).toEqual(['application/x-protobuf']);
  });
});

describe('the standard OTEL_* variables', () => {
  it('are read by the SDK: the protocol, the service name and the exporter’s headers', async () => {
    const collector = await startOtlpReceiver();
    const configured = await startGatewayProcess({
      LOG_LEVEL: 'info',
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'checkout-gateway',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-key=key-for-the-collector',
      OTEL_BSP_SCHEDULE_DELAY: '20',
    });
    try {
      const caller = traceparent();
      const sampled = await fetch(`${configured.url}/quota`, { headers: { authorization: token, traceparent: caller.header } });
      expect(sampled.status).toBe(200);
      const spans = await eventually(
        () => (collector.spans().some((span) => span.traceId === caller.traceId && isServerSpan(span)) ? collector.spans() : undefined),
        10_000,
        'the sampled trace',
      );
      expect(new Set(spans.map((span) => span.traceId))).toEqual(new Set([caller.traceId]));
      expect(new Set(spans.map((span) => span.service))).toEqual(new Set(['checkout-gateway']));
      expect([...collector.contentTypes()]).toEqual(['application/json']);
      expect(collector.headers().every((headers) => headers['x-collector-key'] === 'key-for-the-collector')).toBe(true);
    } finally {
      await stopProcess(configured);
      await collector.close();
    }
  });
});

describe('an operator’s choice of sampler and propagators', () => {
  let collector: OtlpReceiver;
  let configured: GatewayProcess;

  beforeAll(async () => {
    collector = await startOtlpReceiver();
    configured = await startGatewayProcess({
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_BSP_SCHEDULE_DELAY: '20',
      OTEL_TRACES_SAMPLER: 'parentbased_always_off',
      OTEL_PROPAGATORS: 'tracecontext,baggage',
    });
  });

  afterAll(async () => {
    await stopProcess(configured);
    await collector?.close();
  });

  it('OTEL_PROPAGATORS=tracecontext,baggage passes a caller’s baggage on to the provider, and still never its tracestate', async () => {
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const caller = traceparent();
    const response = await fetch(`${configured.url}/graphql`, {
      method: 'POST',
      headers: { ...headers, traceparent: caller.header, tracestate: CALLER_TRACESTATE, baggage: 'user=admin,team=ops' },
      body: JSON.stringify({ query: 'mutation Buy { buy(quota: 60) { ok } }' }),
    });
    expect(await response.json()).toEqual({ data: { buy: { ok: true } } });
    expect(paymentCallOf(60)).toMatchObject({ tracestate: undefined, baggage: 'user=admin,team=ops' });
  });

  it('OTEL_TRACES_SAMPLER decides alone: with parentbased_always_off a caller’s sampled trace is not recorded, and the provider told so', async () => {
    const caller = traceparent();
    const response = await fetch(`${configured.url}/buy`, {
      method: 'POST',
      headers: { authorization: token, 'content-type': 'application/json', traceparent: caller.header },
      body: JSON.stringify({ quota: 70 }),
    });
    expect(await response.text()).toBe('{"status":true,"error":"success"}');
    const { traceparent: sent } = paymentCallOf(70);
    expect(sent).toMatch(new RegExp(`^00-${caller.traceId}-[0-9a-f]{16}-00$`));
    expect(sent).not.toContain(caller.spanId);
    // Stopping flushes every span the process recorded: none of this trace.
    await stopProcess(configured);
    expect(collector.spans().filter((span) => span.traceId === caller.traceId)).toEqual([]);
  });
});

describe('without OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  it('sends the provider none of a caller’s trace headers', async () => {
    const untraced = await startGatewayProcess({ LOG_LEVEL: 'info' });
    try {
      const response = await fetch(`${untraced.url}/buy`, {
        method: 'POST',
        headers: {
          authorization: token,
          'content-type': 'application/json',
          traceparent: traceparent().header,
          tracestate: CALLER_TRACESTATE,
          baggage: CALLER_BAGGAGE,
        },
        body: JSON.stringify({ quota: 80 }),
      });
      expect(await response.text()).toBe('{"status":true,"error":"success"}');
    } finally {
      await stopProcess(untraced);
    }
    expect(paymentCallOf(80)).toEqual({ traceparent: undefined, tracestate: undefined, baggage: undefined });
  });

  it('loads none of the OpenTelemetry SDK, and still serves a caller that sends traceparent', async () => {
    const untraced = await startGatewayProcess({ LOG_LEVEL: 'info' });
    let response: Response;
    try {
      response = await fetch(`${untraced.url}/quota`, { headers: { authorization: token, traceparent: traceparent().header } });
    } finally {
      await stopProcess(untraced);
    }
    expect(response.status).toBe(200);
    // prom-client requires the API (a no-op until an SDK registers) for its process metrics, as it always has.
    expect(packagesLoaded(untraced.process)).toEqual(['@opentelemetry/api']);
    expect(packagesLoaded(gateway.process)).toEqual(expect.arrayContaining(['@opentelemetry/api', '@opentelemetry/sdk-trace-node']));
    expect(untraced.process.stdout()).not.toContain('traceId');
  });
});

/** The @opentelemetry packages a gateway process reported loading (see test/support/loaded-modules.mjs). */
function packagesLoaded(process: NodeProcess): string[] {
  const lines = process.stderr().matchAll(/^loaded module: .*\/node_modules\/(@opentelemetry\/[^/]+)\//gm);
  return [...new Set([...lines].map(([, name]) => name!))].sort();
}
