import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { secretKey } from '../../src/auth/access-token.js';
import { BODY_LIMIT_BYTES, OPERATION_LIMITS } from '../../src/limits.js';
import { documentIdOf } from '../../src/operations/documents.js';
import { ManualClock } from '../support/clock.js';
import { graphql, startTestGateway, TEST_JWT_SECRET, type TestGateway } from '../support/gateway.js';
import { sample, scrapeMetrics } from '../support/metrics.js';
import { exchange, rawRequest } from '../support/raw-http.js';
import { connect, connectAs, type Operation, refusalOf, type TestSocket, websocketHandshake } from '../support/websocket.js';
import { subscriptionsRunning } from './helpers.js';

const API_KEY = 'sk-alice-websocket-0123456789';
const SEED = {
  users: [
    { id: 1, username: 'alice', quota: 12.5, apiKeys: [API_KEY] },
    { id: 2, username: 'bob', quota: 1 },
  ],
};

/** Request targets Express routes to `/graphql` (its router: the pathname as parseurl reads it, any case, one trailing slash). */
const ROUTED_AS_GRAPHQL = [
  '/graphql',
  '/graphql/',
  '/GraphQL',
  '/GRAPHQL/',
  '/graphql?',
  '/graphql?query=%7B%20quota%20%7D',
  '/graphql/?a=b',
  '/graphql#top',
  'http://chat.example.com/graphql',
];
/** Request targets that name `/graphql` only once normalised (dot segments, escapes), or not at all: HTTP answers 404. */
const NOT_ROUTED = [
  '/./graphql',
  '/x/../graphql',
  '/%2e/graphql',
  '/x/%2E%2E/graphql',
  '/graphql/.',
  '/graphql//',
  '//graphql',
  '/%67raphql',
  '/graphql%2F',
  '/graphql;v=1',
  '/graphql/x',
  '/graphqlx',
  '/nowhere',
];

const repeat = (count: number, piece: (index: number) => string) => Array.from({ length: count }, (_, index) => piece(index)).join(' ');

/** A token for `userId` that expires `seconds` after `clock`'s now. */
function tokenExpiringIn(clock: ManualClock, userId: number, seconds: number): Promise<string> {
  const now = Math.floor(clock.now() / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(String(userId))
    .setIssuedAt(now)
    .setExpirationTime(now + seconds)
    .sign(secretKey(TEST_JWT_SECRET));
}

/** The first reply to a subscribe message that is refused before it runs: a GraphQL error of `code`. */
async function expectRefused(operation: Operation, code: string, message?: RegExp): Promise<void> {
  const reply = await operation.next();
  expect(reply.type).toBe('error');
  const errors = reply.payload as { message: string; extensions: { code: string } }[];
  for (const error of errors) expect(error.extensions.code).toBe(code);
  if (message) expect(errors.map((error) => error.message)).toContainEqual(expect.stringMatching(message));
}

describe('who may open a socket', () => {
  const clock = new ManualClock();
  let gateway: TestGateway;
  const sockets: TestSocket[] = [];

  beforeAll(async () => {
    gateway = await startTestGateway({ CORS_ORIGINS: 'https://chat.example.com' }, { clock });
    await gateway.seed(SEED);
  });
  afterAll(async () => {
    for (const socket of sockets) await socket.close();
    await gateway?.stop();
  });

  const accepted = async (authorization: string) => {
    const socket = await connectAs(gateway.url, authorization);
    sockets.push(socket);
    const quota = socket.subscribe('subscription { quota }');
    return (await quota.next()).payload;
  };

  it('accepts the credentials HTTP accepts, in connection_init: Bearer token, bare token, API key', async () => {
    const token = await gateway.token(1);
    expect(await accepted(`Bearer ${token}`)).toEqual({ data: { quota: 12.5 } });
    expect(await accepted(token)).toEqual({ data: { quota: 12.5 } });
    expect(await accepted(API_KEY)).toEqual({ data: { quota: 12.5 } });
    expect(await accepted(`bearer ${await gateway.token(2)}`)).toEqual({ data: { quota: 1 } });
  });

  it('closes with 4403 before any operation when the credential is missing, wrong or expired', async () => {
    const expired = await tokenExpiringIn(clock, 1, -60);
    const otherSecret = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('1')
      .sign(secretKey('another-secret-of-enough-length'));
    for (const connectionParams of [
      {},
      { Authorization: 'Bearer nonsense' },
      { Authorization: `Bearer ${otherSecret}` },
      { Authorization: `Bearer ${expired}` },
      { Authorization: 'sk-unknown-0123456789' },
    ]) {
      const socket = await connect(gateway.url, { connectionParams });
      await expect(socket.acknowledged).rejects.toThrow();
      expect(await socket.closed).toEqual({ code: 4403, reason: 'Forbidden' });
    }
  });

  it('closes with 4403 when the access token expires while connected, not before', async () => {
    const socket = await connectAs(gateway.url, `Bearer ${await tokenExpiringIn(clock, 1, 120)}`);
    const quota = socket.subscribe('subscription { quota }');
    expect((await quota.next()).payload).toEqual({ data: { quota: 12.5 } });
    const running = await subscriptionsRunning(gateway.url);
    // Accepted as long as HTTP accepts it: until exp plus the 30 s of clock skew tolerated.
    await clock.advance(149_000);
    expect(socket.socket.readyState).toBe(socket.socket.OPEN);
    await clock.advance(1_000);
    expect(await socket.closed).toEqual({ code: 4403, reason: 'Forbidden: credential expired' });
    await expect.poll(() => subscriptionsRunning(gateway.url)).toBe(running - 1);
  });

  it('closes every socket whose credential expires at one moment at that moment, and no other', async () => {
    const [soon, later] = [await tokenExpiringIn(clock, 1, 120), await tokenExpiringIn(clock, 2, 300)];
    const sharing = [await connectAs(gateway.url, `Bearer ${soon}`), await connectAs(gateway.url, `Bearer ${soon}`)];
    const closedFirst = await connectAs(gateway.url, `Bearer ${soon}`);
    const lasting = await connectAs(gateway.url, `Bearer ${later}`);
    await closedFirst.close();
    await clock.advance(150_000);
    for (const socket of sharing) expect(await socket.closed).toEqual({ code: 4403, reason: 'Forbidden: credential expired' });
    expect(lasting.socket.readyState).toBe(lasting.socket.OPEN);
    await clock.advance(180_000);
    expect(await lasting.closed).toEqual({ code: 4403, reason: 'Forbidden: credential expired' });
  });

  it('closes a socket that sent no connection_init within 3 s with 4408, and keeps one that did', async () => {
    const authenticated = await connectAs(gateway.url, `Bearer ${await gateway.token(1)}`);
    sockets.push(authenticated);
    const silent = await connect(gateway.url, { connectionParams: null });
    await clock.advance(2_999);
    expect(silent.socket.readyState).toBe(silent.socket.OPEN);
    await clock.advance(1);
    expect(await silent.closed).toEqual({ code: 4408, reason: 'Connection initialisation timeout' });
    expect(authenticated.socket.readyState).toBe(authenticated.socket.OPEN);
  });

  it('lets a browser page open a socket only from the server itself or a CORS_ORIGINS origin', async () => {
    const token = `Bearer ${await gateway.token(1)}`;
    const own = new URL(gateway.url).origin;
    for (const origin of [own, 'https://chat.example.com']) {
      const socket = await connectAs(gateway.url, token, { headers: { origin } });
      await socket.close();
    }
    const refusal = await refusalOf(
      connect(gateway.url, { headers: { origin: 'https://evil.example.net' }, connectionParams: { Authorization: token } }),
    );
    expect(refusal.status).toBe(403);
    expect(JSON.parse(refusal.body).errors[0]).toMatchObject({ extensions: { code: 'FORBIDDEN' } });
  });

  it('opens a socket on exactly the paths HTTP routes as /graphql, and answers the others as HTTP does', async () => {
    const host = new URL(gateway.url).host;
    const doorsOf = async (target: string) => {
      const [http] = await exchange(gateway.url, [rawRequest('GET', target, [['Host', host]])], 1);
      const handshake = websocketHandshake(target, host);
      const [opening] = await exchange(gateway.url, [handshake.request], 1);
      const opened = opening!.status === 101 && opening!.headers['sec-websocket-accept'] === handshake.accept;
      return { http: http!.status, websocket: opened ? 'open' : opening!.status };
    };
    const seen: Record<string, unknown> = {};
    const expected: Record<string, unknown> = {};
    for (const target of ROUTED_AS_GRAPHQL) {
      seen[target] = await doorsOf(target);
      // Routed to /graphql over HTTP: without a credential, 401.
      expected[target] = { http: 401, websocket: 'open' };
    }
    for (const target of NOT_ROUTED) {
      seen[target] = await doorsOf(target);
      expected[target] = { http: 404, websocket: 404 };
    }
    expect(seen).toEqual(expected);
  });
});

describe('what a socket may run', () => {
  let gateway: TestGateway;
  let socket: TestSocket;

  beforeAll(async () => {
    gateway = await startTestGateway({ SUBSCRIPTIONS_PER_CALLER: '2', WEBSOCKETS_PER_ADDRESS: '3' });
    await gateway.seed(SEED);
    socket = await connectAs(gateway.url, `Bearer ${await gateway.token(1)}`);
  });
  afterAll(async () => {
    await socket?.close();
    await gateway?.stop();
  });

  it('refuses documents over the limits HTTP has, before anything is read', async () => {
    const commands = await gateway.commandsDuring(async () => {
      await expectRefused(
        socket.subscribe(`subscription { ${repeat(OPERATION_LIMITS.tokens, () => '__typename')} }`),
        'GRAPHQL_PARSE_FAILED',
        /Document contains more th.. 1000 tokens/,
      );
      // Deeper than any path of the schema: refused for its depth as well as for its fields.
      await expectRefused(
        socket.subscribe('subscription { conversationEvents { conversation { messages { role { a { b { c } } } } } } }'),
        'GRAPHQL_VALIDATION_FAILED',
        /Query depth limit of 6 exceeded/,
      );
      await expectRefused(
        socket.subscribe(
          `subscription { conversationEvents { conversation { ${repeat(OPERATION_LIMITS.aliases + 1, (index) => `n${index}: name`)} } } }`,
        ),
        'GRAPHQL_VALIDATION_FAILED',
        /Aliases limit of 15 exceeded/,
      );
      await expectRefused(
        socket.subscribe(`subscription { conversationEvents { conversation { messages { ${repeat(500, () => 'role')} } } } }`),
        'GRAPHQL_VALIDATION_FAILED',
        /Operation cost limit of 5000 exceeded/,
      );
      await expectRefused(
        socket.subscribe(`subscription { quota ${repeat(OPERATION_LIMITS.directives + 1, () => '@include(if: true)')} }`),
        'GRAPHQL_VALIDATION_FAILED',
        /Directives limit/,
      );
      await expectRefused(socket.subscribe('subscription { nope }'), 'GRAPHQL_VALIDATION_FAILED', /Cannot query field "nope"/);
    });
    expect(commands).toEqual([]);
  });

  it('runs only subscriptions, and HTTP everything but subscriptions', async () => {
    await expectRefused(socket.subscribe('{ quota }'), 'BAD_REQUEST', /only subscriptions are served over WebSocket/);
    await expectRefused(socket.subscribe('mutation { deleteAllConversations { ok } }'), 'BAD_REQUEST', /only subscriptions/);
    expect(await gateway.models.users.countDocuments()).toBe(2);
    const overHttp = await graphql(gateway, 'subscription { quota }', { authorization: `Bearer ${await gateway.token(1)}` });
    expect(overHttp.status).toBe(400);
    expect(overHttp.body.errors).toMatchObject([
      {
        message:
          'subscriptions are served over WebSocket (graphql-transport-ws) on /graphql, over Server-Sent Events (graphql-sse) on /graphql/stream, and on POST /graphql with Accept: multipart/mixed;subscriptionSpec="1.0"',
        extensions: { code: 'BAD_REQUEST' },
      },
    ]);
  });

  it('caps the subscriptions one caller runs at once, over all their sockets', async () => {
    const other = await connectAs(gateway.url, `Bearer ${await gateway.token(1)}`);
    const first = socket.subscribe('subscription { quota }');
    const second = other.subscribe('subscription { conversationEvents { number } }');
    expect((await first.next()).type).toBe('next');
    await expect.poll(() => subscriptionsRunning(gateway.url)).toBe(2);
    await expectRefused(other.subscribe('subscription { quota }'), 'TOO_MANY_SUBSCRIPTIONS', /at most 2 at once per caller/);
    // Another caller has a cap of their own.
    const bob = await connectAs(gateway.url, `Bearer ${await gateway.token(2)}`);
    expect((await bob.subscribe('subscription { quota }').next()).payload).toEqual({ data: { quota: 1 } });
    await bob.close();
    // Completing one frees its place.
    second.complete();
    await expect.poll(() => subscriptionsRunning(gateway.url)).toBe(1);
    expect((await other.subscribe('subscription { quota }').next()).type).toBe('next');
    first.complete();
    await other.close();
  });

  it('caps the sockets one address holds open, answering 429 over HTTP', async () => {
    await expect.poll(async () => ((await (await fetch(`${gateway.url}/readyz`)).json()) as { websockets: number }).websockets).toBe(1);
    const more = [await connectAs(gateway.url, await gateway.token(2)), await connectAs(gateway.url, await gateway.token(2))];
    const refusal = await refusalOf(connect(gateway.url, { connectionParams: {} }));
    expect(refusal.status).toBe(429);
    expect(JSON.parse(refusal.body).errors[0]).toEqual({
      message: 'too many live connections (WebSockets and event streams) from this address: at most 3 at once',
      extensions: { code: 'TOO_MANY_CONNECTIONS' },
    });
    await more.pop()!.close();
    await expect.poll(async () => ((await (await fetch(`${gateway.url}/readyz`)).json()) as { websockets: number }).websockets).toBe(2);
    more.push(await connectAs(gateway.url, await gateway.token(2)));
    for (const extra of more) await extra.close();
  });

  it('gives an address its place back when a handshake it was counted for is refused', async () => {
    const host = new URL(gateway.url).host;
    // Counted against the address before ws reads the key, which it then refuses with 400.
    const badKey = websocketHandshake('/graphql', host).request.replace(/Sec-WebSocket-Key: .*\r\n/, 'Sec-WebSocket-Key: short\r\n');
    for (let attempt = 0; attempt < 3; attempt++) {
      const [answer] = await exchange(gateway.url, [badKey], 1);
      expect(answer!.status).toBe(400);
    }
    // One socket of this block is open: had the refused ones kept their places, the cap of 3 would refuse these.
    const more = [await connectAs(gateway.url, await gateway.token(2)), await connectAs(gateway.url, await gateway.token(2))];
    for (const extra of more) await extra.close();
  });

  it('closes a socket that sends a message over the size limit (1009)', async () => {
    const big = await connectAs(gateway.url, await gateway.token(2));
    big.send(
      JSON.stringify({ id: '1', type: 'subscribe', payload: { query: `subscription { quota } # ${'x'.repeat(BODY_LIMIT_BYTES)}` } }),
    );
    expect((await big.closed).code).toBe(1009);
  });

  it('reports open sockets, running subscriptions, events and change streams in /metrics', async () => {
    const eventsSent = async () =>
      sample(await scrapeMetrics(gateway.url), 'graphql_subscription_events_total', { field: 'quota', transport: 'websocket' });
    const sentBefore = await eventsSent();
    const quota = socket.subscribe('subscription { quota }');
    expect((await quota.next()).type).toBe('next');
    await gateway.models.users.updateOne({ id: 1 }, { $inc: { balanceMicros: 1 } });
    expect((await quota.next()).payload).toEqual({ data: { quota: 12.500001 } });
    const metrics = await scrapeMetrics(gateway.url);
    expect(sample(metrics, 'graphql_websockets_open')).toBe(1);
    expect(sample(metrics, 'graphql_subscriptions_active', { field: 'quota' })).toBe(1);
    expect(sample(metrics, 'graphql_subscriptions_active', { field: 'conversationEvents' })).toBe(0);
    // Each event counted once, whichever scrape reads it.
    expect(sample(metrics, 'graphql_subscription_events_total', { field: 'quota', transport: 'websocket' })).toBe(sentBefore + 2);
    expect(await eventsSent()).toBe(sentBefore + 2);
    expect(sample(metrics, 'mongodb_change_streams_open', { collection: 'users' })).toBe(1);
    expect(await (await fetch(`${gateway.url}/readyz`)).json()).toEqual({ status: 'ready', websockets: 1, subscriptions: 1 });
    quota.complete();
    // The last subscriber of a collection gone, its stream closes (within a server wait of 1 s).
    await expect
      .poll(async () => sample(await scrapeMetrics(gateway.url), 'mongodb_change_streams_open', { collection: 'users' }), {
        timeout: 5_000,
      })
      .toBe(0);
  });
});

describe('rate limits', () => {
  let gateway: TestGateway;

  beforeAll(async () => {
    // On a clock that stands still, however slowly the messages arrive: no second passes between them.
    gateway = await startTestGateway({ RATE_LIMIT: '1' }, { clock: new ManualClock() });
    await gateway.seed(SEED);
  });
  afterAll(() => gateway?.stop());

  it('count subscribe messages against their caller, as HTTP requests are', async () => {
    const socket = await connectAs(gateway.url, `Bearer ${await gateway.token(1)}`);
    // One a second plus a burst of two: the fourth at once is over.
    const replies = [];
    for (let index = 0; index < 4; index += 1) replies.push(await socket.subscribe('subscription { quota }').next());
    expect(replies.slice(0, 3).map((reply) => reply.type)).toEqual(['next', 'next', 'next']);
    expect(replies[3]).toMatchObject({ type: 'error', payload: [{ message: 'too many requests', extensions: { code: 'RATE_LIMITED' } }] });
    // HTTP counts against the same budget.
    const answer = await fetch(`${gateway.url}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await gateway.token(1)}`, 'content-type': 'application/json' },
      body: '{"query":"{ quota }"}',
    });
    expect(answer.status).toBe(429);
    await socket.close();
  });
});

describe('stopping with subscriptions open', () => {
  it('serves them through the shutdown delay, then closes them with 1001 before the database closes', async () => {
    let release!: () => void;
    // The last callback scheduled (the shutdown delay's) runs when the test releases it.
    const clock = { now: () => Date.now(), schedule: (callback: () => unknown) => ((release = () => void callback()), () => undefined) };
    const gateway = await startTestGateway({ SHUTDOWN_DELAY_MS: '5000' }, { clock });
    try {
      await gateway.seed(SEED);
      const socket = await connectAs(gateway.url, `Bearer ${await gateway.token(1)}`);
      const quota = socket.subscribe('subscription { quota }');
      expect((await quota.next()).payload).toEqual({ data: { quota: 12.5 } });
      const order: string[] = [];
      void socket.closed.then(({ code }) => order.push(`socket closed ${code}`));
      gateway.database.connection.once('close', () => order.push('database closed'));

      const stopped = gateway.stop();
      const readiness = await fetch(`${gateway.url}/readyz`);
      expect(readiness.status).toBe(503);
      expect(await readiness.json()).toEqual({ status: 'stopping', websockets: 1, subscriptions: 1 });
      await gateway.models.users.updateOne({ id: 1 }, { $inc: { balanceMicros: 1_000_000 } });
      expect((await quota.next()).payload).toEqual({ data: { quota: 13.5 } });
      expect(order).toEqual([]);

      release();
      expect(await socket.closed).toEqual({ code: 1001, reason: 'server stopping' });
      await stopped;
      expect(order).toEqual(['socket closed 1001', 'database closed']);
    } finally {
      await gateway.testDatabase.stop();
    }
  });
});

describe('trusted documents and production answers, as over HTTP', () => {
  const LIVE_BALANCE = 'subscription LiveBalance { quota }';
  let gateway: TestGateway;
  let socket: TestSocket;

  beforeAll(async () => {
    const file = join(await mkdtemp(join(tmpdir(), 'trusted-subscriptions-')), 'documents.json');
    await writeFile(file, JSON.stringify({ [documentIdOf(LIVE_BALANCE)]: LIVE_BALANCE }));
    gateway = await startTestGateway({ PERSISTED_DOCUMENTS: file, PERSISTED_DOCUMENTS_ONLY: 'true', NODE_ENV: 'production' });
    await gateway.seed(SEED);
    socket = await connectAs(gateway.url, `Bearer ${await gateway.token(1)}`);
  });
  afterAll(async () => {
    await socket?.close();
    await gateway?.stop();
  });

  it('runs a trusted document named by id (with the empty query graphql-ws requires), by documentId or persisted-query hash', async () => {
    const byId = socket.subscribe('', undefined, { documentId: documentIdOf(LIVE_BALANCE) });
    expect((await byId.next()).payload).toEqual({ data: { quota: 12.5 } });
    const byHash = socket.subscribe('', undefined, {
      extensions: { persistedQuery: { version: 1, sha256Hash: documentIdOf(LIVE_BALANCE) } },
    });
    expect((await byHash.next()).payload).toEqual({ data: { quota: 12.5 } });
    byId.complete();
    byHash.complete();
  });

  it('refuses a document text where only trusted documents run, and an unknown id', async () => {
    await expectRefused(socket.subscribe(LIVE_BALANCE), 'PERSISTED_QUERY_ONLY');
    await expectRefused(
      socket.subscribe('', undefined, { documentId: documentIdOf('subscription { quota }') }),
      'PERSISTED_QUERY_NOT_FOUND',
    );
  });

  it('answers an invalid document with one error that names nothing of the schema, in production', async () => {
    const open = await startTestGateway({ NODE_ENV: 'production' });
    try {
      await open.seed(SEED);
      const other = await connectAs(open.url, `Bearer ${await open.token(1)}`);
      const reply = await other.subscribe('subscription { quot conversationEvent { nme } }').next();
      expect(reply).toEqual({
        type: 'error',
        payload: [
          {
            message: 'the operation is not valid (the reason is shown outside production)',
            extensions: { code: 'GRAPHQL_VALIDATION_FAILED' },
          },
        ],
      });
      await other.close();
    } finally {
      await open.stop();
    }
  });
});
