import { mkdtemp, writeFile } from 'node:fs/promises';
import { connect as connectTcp, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { secretKey } from '../../src/auth/access-token.js';
import { documentIdOf } from '../../src/operations/documents.js';
import { captureLog } from '../support/captured-log.js';
import { ManualClock } from '../support/clock.js';
import { startTestGateway, TEST_JWT_SECRET, type TestGateway } from '../support/gateway.js';
import { sample, scrapeMetrics } from '../support/metrics.js';
import { seededRandom } from '../support/random.js';
import { connectAs } from '../support/websocket.js';
import { subscriptionsRunning } from './helpers.js';

/**
 * The bounds every live connection holds, whatever its door: one list of doors, the same cases
 * for each. A new door is added to `DOORS`, and must pass every case.
 */

const DOORS = ['websocket', 'sse, distinct connections', 'sse, a single connection', 'multipart'] as const;
type Door = (typeof DOORS)[number];
const HTTP_DOORS = DOORS.filter((door) => door !== 'websocket');

const SEED = {
  users: [
    { id: 1, username: 'alice', quota: 12.5 },
    { id: 2, username: 'bob', quota: 3 },
  ],
  conversations: [{ userId: 1, id: 1, name: 'Trip plan', model: 'gpt-4o', enableWeb: false, messages: [] }],
};
const BALANCE = 'subscription { quota }';
const CONVERSATIONS = 'subscription { conversationEvents { number conversation { name messages { content } } } }';

/** What a client subscribes with: a document's text, or a trusted document's id beside an empty text. */
type Operation = string | { documentId: string };
const payloadOf = (operation: Operation) => (typeof operation === 'string' ? { query: operation } : { query: '', ...operation });

/** A live subscription opened over a door by a client that reads everything it is sent. */
interface Live {
  /** Everything received so far, as text (WebSocket: each message's JSON). */
  received(): string;
  /** The client stops reading its socket. */
  stopReading(): void;
  /** Settles when the connection under it closes. */
  closed: Promise<void>;
  /** The client goes away at once. */
  destroy(): void;
}

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

/** An HTTP/1.1 request as bytes. */
function httpRequest(method: string, path: string, headers: Record<string, string>, body = ''): string {
  const fields = Object.entries({ host: '127.0.0.1', ...headers, ...(body && { 'content-length': String(Buffer.byteLength(body)) }) });
  return `${method} ${path} HTTP/1.1\r\n${fields.map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n${body}`;
}

/** A raw TCP connection to the gateway, which collects what it is sent. */
async function rawSocket(gateway: TestGateway): Promise<{ socket: Socket; received(): string; closed: Promise<void> }> {
  const { hostname, port } = new URL(gateway.url);
  const socket = connectTcp(Number(port), hostname);
  socket.on('error', () => {});
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  return { socket, received: () => text, closed };
}

/** Reserves a single-connection stream; answers its token. */
async function reserve(gateway: TestGateway, authorization: string): Promise<Response> {
  return fetch(`${gateway.url}/graphql/stream`, { method: 'PUT', headers: { authorization } });
}

/** Adds an operation to a single-connection stream; answers the HTTP status. */
async function addOperation(gateway: TestGateway, authorization: string, token: string, operation: Operation): Promise<number> {
  return (await postOperation(gateway, authorization, token, operation)).status;
}

/** Adds an operation to a single-connection stream; answers the HTTP answer, its body read. */
async function postOperation(
  gateway: TestGateway,
  authorization: string,
  token: string,
  operation: Operation,
): Promise<{ status: number; body: string }> {
  const posted = await fetch(`${gateway.url}/graphql/stream`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json', 'x-graphql-event-stream-token': token },
    body: JSON.stringify({ ...payloadOf(operation), extensions: { operationId: 'op' } }),
  });
  return { status: posted.status, body: await posted.text() };
}

/** The request that opens a stream over an HTTP door (for a single connection: its GET, the stream reserved as `token`). */
function streamRequest(door: Door, authorization: string, operation: Operation, token?: string): string {
  const body = JSON.stringify(payloadOf(operation));
  const json = { authorization, 'content-type': 'application/json' };
  if (door === 'multipart') return httpRequest('POST', '/graphql', { ...json, accept: 'multipart/mixed;subscriptionSpec=1.0' }, body);
  if (door === 'sse, a single connection')
    return httpRequest('GET', '/graphql/stream', { authorization, accept: 'text/event-stream', 'x-graphql-event-stream-token': token! });
  return httpRequest('POST', '/graphql/stream', { ...json, accept: 'text/event-stream' }, body);
}

/** Opens `operation` over `door` as a client that reads all it is sent; resolves once the subscription runs. */
async function open(gateway: TestGateway, door: Door, authorization: string, operation: Operation): Promise<Live> {
  const before = await subscriptionsRunning(gateway.url);
  const live = await subscribe(gateway, door, authorization, operation);
  expect(live.refusal).toBeUndefined();
  await expect.poll(() => subscriptionsRunning(gateway.url), { timeout: 5_000, interval: 10 }).toBe(before + 1);
  return live;
}

/**
 * Subscribes with `operation` over `door` as a client that reads all it is sent; resolves once
 * the request is sent (for a single connection: once its operation is added, or refused).
 */
async function subscribe(
  gateway: TestGateway,
  door: Door,
  authorization: string,
  operation: Operation,
): Promise<Live & { refusal?: string }> {
  if (door === 'websocket') {
    const socket = await connectAs(gateway.url, authorization);
    const messages: string[] = [];
    socket.socket.on('message', (data) => messages.push(data.toString()));
    const { query, ...rest } = payloadOf(operation);
    socket.subscribe(query, undefined, rest);
    return {
      received: () => messages.join('\n'),
      closed: socket.closed.then(() => {}),
      destroy: () => socket.socket.terminate(),
      stopReading: () => (socket.socket as unknown as { _socket: Socket })._socket.pause(),
    };
  }
  const raw = await rawSocket(gateway);
  const live = { received: raw.received, closed: raw.closed, destroy: () => raw.socket.destroy(), stopReading: () => raw.socket.pause() };
  let token: string | undefined;
  if (door === 'sse, a single connection') {
    const reserved = await reserve(gateway, authorization);
    expect(reserved.status).toBe(201);
    token = await reserved.text();
  }
  raw.socket.write(streamRequest(door, authorization, operation, token));
  if (token === undefined) return live;
  await expect.poll(() => raw.received(), { timeout: 5_000, interval: 10 }).toContain('\r\n\r\n');
  const added = await postOperation(gateway, authorization, token, operation);
  if (added.status === 202) return live;
  return { ...live, refusal: `${added.status} ${added.body}` };
}

/** The `conversationEvents` events the gateway ran and sent over `door`'s transport. */
async function eventsRun(gateway: TestGateway, door: Door): Promise<number> {
  const transport = door === 'websocket' || door === 'multipart' ? door : 'sse';
  return sample(await scrapeMetrics(gateway.url), 'graphql_subscription_events_total', { field: 'conversationEvents', transport });
}

/** Live connections the gateway counts as open, every door together: its WebSockets and its HTTP streams. */
async function connectionsOpen(gateway: TestGateway): Promise<number> {
  const metrics = await scrapeMetrics(gateway.url);
  return (
    (sample(metrics, 'graphql_websockets_open') ?? 0) +
    (sample(metrics, 'graphql_event_streams_open', { transport: 'sse' }) ?? 0) +
    (sample(metrics, 'graphql_event_streams_open', { transport: 'multipart' }) ?? 0)
  );
}

describe.each(DOORS)('a live connection over %s', (door) => {
  const clock = new ManualClock();
  const log = captureLog();
  let gateway: TestGateway;
  let alice: string;

  beforeAll(async () => {
    gateway = await startTestGateway(
      { LIVE_CONNECTIONS_PER_CALLER: '3', WEBSOCKETS_PER_ADDRESS: '5', WEBSOCKET_MAX_BUFFERED_BYTES: '65536' },
      { clock, logger: log.logger },
    );
    await gateway.seed(SEED);
    alice = `Bearer ${await gateway.token(1)}`;
  });
  afterAll(() => gateway?.stop());

  it('ends when its access token expires, as a WebSocket closes with 4403, and releases its subscription', async () => {
    const live = await open(gateway, door, `Bearer ${await tokenExpiringIn(clock, 1, 120)}`, BALANCE);
    const before = await subscriptionsRunning(gateway.url);
    // Accepted as long as HTTP accepts it: until exp plus the 30 s of clock skew tolerated.
    await clock.advance(149_000);
    expect(await subscriptionsRunning(gateway.url)).toBe(before);
    await clock.advance(1_000);
    await live.closed;
    await expect.poll(() => subscriptionsRunning(gateway.url), { timeout: 5_000 }).toBe(before - 1);
    if (door !== 'websocket') {
      expect(live.received()).toContain('"code":"UNAUTHENTICATED"');
      expect(live.received()).toContain('the credential expired');
    }
  });

  it('counts against one cap per caller and one per address, every door together', async () => {
    const bob = `Bearer ${await gateway.token(2)}`;
    // Three of alice's, idle or not, over three doors: a fourth over this one is refused.
    const held = [await open(gateway, 'websocket', alice, BALANCE), await open(gateway, 'multipart', alice, BALANCE)];
    const idle = await reserve(gateway, alice);
    expect(idle.status).toBe(201);
    const fourth = await refusedOpening(door, alice);
    expect(fourth).toMatch(/too many live connections .*for this caller: at most 3/);
    // Two of bob's from the same address make five: a sixth from there is refused, whoever's it is.
    const bobs = [await open(gateway, 'sse, distinct connections', bob, BALANCE), await open(gateway, 'websocket', bob, BALANCE)];
    const sixth = await refusedOpening(door, bob);
    expect(sixth).toMatch(/too many live connections .*from this address: at most 5/);
    for (const live of [...held, ...bobs]) {
      live.destroy();
      await live.closed;
    }
    // The reservation is let go after its 30 s, and with it the caller's place.
    await clock.advance(30_000);
    const again = await open(gateway, door, alice, BALANCE);
    again.destroy();
    await again.closed;
  });

  /** Opens a connection over `door` that the caps refuse: the refusal's message. */
  async function refusedOpening(over: Door, authorization: string): Promise<string> {
    if (over === 'websocket') {
      // Over the address's cap, the upgrade is answered 429; over the caller's, the socket is closed with 1013 at `connection_init`.
      const socket = await connectAs(gateway.url, authorization).catch(
        (error: Error & { refusal?: { status: number; body: string } }) => error,
      );
      if (!(socket instanceof Error)) return (await socket.closed).reason;
      if (socket.refusal === undefined) return socket.message;
      expect(socket.refusal.status).toBe(429);
      return socket.refusal.body;
    }
    const answer =
      over === 'sse, a single connection'
        ? await reserve(gateway, authorization)
        : await fetch(`${gateway.url}${over === 'multipart' ? '/graphql' : '/graphql/stream'}`, {
            method: 'POST',
            headers: {
              authorization,
              'content-type': 'application/json',
              accept: over === 'multipart' ? 'multipart/mixed;subscriptionSpec=1.0' : 'text/event-stream',
            },
            body: JSON.stringify({ query: BALANCE }),
          });
    expect(answer.status).toBe(429);
    const body = (await answer.json()) as { errors: { message: string; extensions: { code: string } }[] };
    expect(body.errors[0]!.extensions.code).toBe('TOO_MANY_CONNECTIONS');
    return body.errors[0]!.message;
  }

  it('releases every subscription when its client goes away at any moment of its opening', async () => {
    const random = seededRandom(42);
    const before = await subscriptionsRunning(gateway.url);
    for (let attempt = 0; attempt < 30; attempt += 1) {
      const delay = Math.floor(random() * 8);
      if (door === 'websocket') {
        const socket = await connectAs(gateway.url, alice);
        socket.subscribe(CONVERSATIONS);
        await new Promise((resolve) => setTimeout(resolve, delay));
        socket.socket.terminate();
        await socket.closed;
      } else {
        let token: string | undefined;
        if (door === 'sse, a single connection') token = await (await reserve(gateway, alice)).text();
        const raw = await rawSocket(gateway);
        raw.socket.write(streamRequest(door, alice, CONVERSATIONS, token));
        const adding = token === undefined ? undefined : addOperation(gateway, alice, token, CONVERSATIONS);
        await new Promise((resolve) => setTimeout(resolve, delay));
        raw.socket.destroy();
        await raw.closed;
        await adding;
      }
    }
    await expect.poll(() => subscriptionsRunning(gateway.url), { timeout: 5_000, interval: 20 }).toBe(before);
    await expect.poll(() => connectionsOpen(gateway), { timeout: 5_000, interval: 20 }).toBe(0);
  });

  it('drops a reader that stops reading once the server holds more than the bound for it, releasing its subscription', async () => {
    const content = 'w'.repeat(300_000);
    const before = await subscriptionsRunning(gateway.url);
    const live = await open(gateway, door, alice, CONVERSATIONS);
    const logged = log.lines().length;
    const run = await eventsRun(gateway, door);
    live.stopReading();
    // Past what the kernel's buffers on both ends take, the server holds the events: then it drops the connection.
    let renames = 0;
    while (renames < 200 && (await subscriptionsRunning(gateway.url)) > before) {
      await gateway.models.conversations.updateOne(
        { userId: 1, id: 1 },
        { $set: { name: `Slow ${renames}`, messages: [{ role: 'user', content }] } },
      );
      renames += 1;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(await subscriptionsRunning(gateway.url)).toBe(before);
    // Each change was run and written as it came, none kept waiting unsent in its inbox: what the
    // server held for the reader was bytes on its backlog, which the bound counts.
    expect((await eventsRun(gateway, door)) - run).toBeGreaterThanOrEqual(renames - 2);
    await expect.poll(() => connectionsOpen(gateway), { timeout: 5_000, interval: 20 }).toBe(0);
    // Dropped for what it left unread, not by a later beat that found it silent.
    expect(log.lines().slice(logged)).toContainEqual(expect.objectContaining({ endedFor: 'unread data' }));
    live.destroy();
    await gateway.models.conversations.updateOne({ userId: 1, id: 1 }, { $set: { name: 'Trip plan', messages: [] } });
  });

  it('delivers one event larger than the unsent-data bound to a reader that keeps up', async () => {
    const content = 'y'.repeat(300_000);
    const live = await open(gateway, door, alice, CONVERSATIONS);
    await gateway.models.conversations.updateOne({ userId: 1, id: 1 }, { $set: { messages: [{ role: 'user', content }] } });
    await expect.poll(() => live.received().includes(content), { timeout: 10_000, interval: 20 }).toBe(true);
    live.destroy();
    await live.closed;
    await gateway.models.conversations.updateOne({ userId: 1, id: 1 }, { $set: { messages: [] } });
  });
});

describe.each(DOORS)('a live connection over %s, where only trusted documents run', (door) => {
  const known = documentIdOf(BALANCE);
  let gateway: TestGateway;
  let alice: string;

  beforeAll(async () => {
    const file = join(await mkdtemp(join(tmpdir(), 'trusted-live-')), 'documents.json');
    await writeFile(file, JSON.stringify({ [known]: BALANCE }));
    gateway = await startTestGateway({ PERSISTED_DOCUMENTS: file, PERSISTED_DOCUMENTS_ONLY: 'true' });
    await gateway.seed(SEED);
    alice = `Bearer ${await gateway.token(1)}`;
  });
  afterAll(() => gateway?.stop());

  it('runs a trusted document named by its id', async () => {
    const live = await open(gateway, door, alice, { documentId: known });
    await expect.poll(() => live.received(), { timeout: 5_000, interval: 10 }).toContain('{"data":{"quota":12.5}}');
    live.destroy();
    await live.closed;
  });

  it.each([
    ['an id no trusted document has', { documentId: documentIdOf('subscription { balance: quota }') }, 'PERSISTED_QUERY_NOT_FOUND'],
    ['a document text, even a trusted one’s', BALANCE, 'PERSISTED_QUERY_ONLY'],
  ] as const)('refuses %s, and runs nothing for it', async (_what, operation, code) => {
    const before = await subscriptionsRunning(gateway.url);
    const live = await subscribe(gateway, door, alice, operation);
    if (live.refusal === undefined) await expect.poll(() => live.received(), { timeout: 5_000, interval: 10 }).toContain(code);
    const answer = live.refusal ?? live.received();
    expect(answer).toContain(`"code":"${code}"`);
    expect(answer).not.toContain('"data"');
    expect(await subscriptionsRunning(gateway.url)).toBe(before);
    live.destroy();
    await live.closed;
  });
});

describe.each(HTTP_DOORS)('requests pipelined behind a stream over %s', (door) => {
  let gateway: TestGateway;
  let alice: string;

  beforeAll(async () => {
    gateway = await startTestGateway();
    await gateway.seed(SEED);
    alice = `Bearer ${await gateway.token(1)}`;
  });
  afterAll(() => gateway?.stop());

  it('are never run, and go with the connection: nothing stays open or counted once the client closes', async () => {
    const before = await subscriptionsRunning(gateway.url);
    for (let connection = 0; connection < 10; connection += 1) {
      let token: string | undefined;
      if (door === 'sse, a single connection') token = await (await reserve(gateway, alice)).text();
      const raw = await rawSocket(gateway);
      const behind = [
        streamRequest('sse, distinct connections', alice, BALANCE),
        streamRequest('multipart', alice, BALANCE),
        httpRequest(
          'POST',
          '/graphql',
          { authorization: alice, 'content-type': 'application/json' },
          JSON.stringify({ query: '{ quota }' }),
        ),
      ];
      raw.socket.write(streamRequest(door, alice, BALANCE, token) + behind.join(''));
      if (token !== undefined) expect(await addOperation(gateway, alice, token, BALANCE)).toBe(202);
      await expect.poll(() => subscriptionsRunning(gateway.url), { timeout: 5_000, interval: 10 }).toBe(before + 1);
      // Only the stream ahead of them answers; the requests behind it ran nothing.
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(await subscriptionsRunning(gateway.url)).toBe(before + 1);
      expect(raw.received().match(/HTTP\/1\.1 /g)).toHaveLength(1);
      raw.socket.destroy();
      await raw.closed;
    }
    await expect.poll(() => subscriptionsRunning(gateway.url), { timeout: 5_000, interval: 20 }).toBe(before);
    await expect.poll(() => connectionsOpen(gateway), { timeout: 5_000, interval: 20 }).toBe(0);
  });

  it('leave nothing behind when the client half-closes its side of the connection', async () => {
    const before = await subscriptionsRunning(gateway.url);
    let token: string | undefined;
    if (door === 'sse, a single connection') token = await (await reserve(gateway, alice)).text();
    const raw = await rawSocket(gateway);
    raw.socket.write(streamRequest(door, alice, BALANCE, token) + streamRequest('multipart', alice, BALANCE));
    if (token !== undefined) expect(await addOperation(gateway, alice, token, BALANCE)).toBe(202);
    await expect.poll(() => subscriptionsRunning(gateway.url), { timeout: 5_000, interval: 10 }).toBe(before + 1);
    // Done sending, still able to read: the server ends the connection and everything on it.
    raw.socket.end();
    await raw.closed;
    await expect.poll(() => subscriptionsRunning(gateway.url), { timeout: 5_000, interval: 20 }).toBe(before);
    await expect.poll(() => connectionsOpen(gateway), { timeout: 5_000, interval: 20 }).toBe(0);
  });

  it('do not hold the server’s stop: it completes the stream and exits within the shutdown budget', async () => {
    const stopping = await startTestGateway({}, { database: gateway.testDatabase });
    const raw = await rawSocket(stopping);
    let token: string | undefined;
    if (door === 'sse, a single connection') token = await (await reserve(stopping, alice)).text();
    raw.socket.write(streamRequest(door, alice, BALANCE, token) + streamRequest('sse, distinct connections', alice, BALANCE));
    if (token !== undefined) expect(await addOperation(stopping, alice, token, BALANCE)).toBe(202);
    await expect.poll(() => subscriptionsRunning(stopping.url), { timeout: 5_000, interval: 10 }).toBe(1);
    // The client stops reading, and the server stops: it ends the stream and exits, within its budget.
    raw.socket.pause();
    const started = Date.now();
    await stopping.stop();
    expect(Date.now() - started).toBeLessThan(8_000);
    raw.socket.destroy();
  });
});

describe('a single-connection stream reserved and not connected', () => {
  let gateway: TestGateway;
  let alice: string;

  beforeAll(async () => {
    gateway = await startTestGateway();
    await gateway.seed(SEED);
    alice = `Bearer ${await gateway.token(1)}`;
  });
  afterAll(() => gateway?.stop());

  it('runs nothing for its subscriptions until its GET connects, then sends what happened meanwhile', async () => {
    const token = await (await reserve(gateway, alice)).text();
    const sent = async () =>
      sample(await scrapeMetrics(gateway.url), 'graphql_subscription_events_total', { field: 'conversationEvents', transport: 'sse' }) ?? 0;
    const before = await sent();
    expect(await addOperation(gateway, alice, token, CONVERSATIONS)).toBe(202);
    for (let rename = 0; rename < 5; rename += 1) {
      await gateway.models.conversations.updateOne({ userId: 1, id: 1 }, { $set: { name: `Rename ${rename}` } });
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Nothing executed, nothing held for a client that is not there.
    expect(await sent()).toBe(before);
    const raw = await rawSocket(gateway);
    raw.socket.write(streamRequest('sse, a single connection', alice, CONVERSATIONS, token));
    await expect.poll(() => raw.received(), { timeout: 5_000, interval: 20 }).toContain('Rename 4');
    raw.socket.destroy();
    await raw.closed;
  });
});
