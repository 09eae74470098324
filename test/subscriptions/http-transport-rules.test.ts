import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { createClient as createSseClient, type RequestParams } from 'graphql-sse';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { documentIdOf } from '../../src/operations/documents.js';
import { captureLog } from '../support/captured-log.js';
import { ManualClock } from '../support/clock.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { connectAs } from '../support/websocket.js';
import { Received, subscriptionsRunning } from './helpers.js';

/**
 * What the HTTP subscription transports share with the WebSocket: the same trusted documents, the same
 * errors naming their request, the same shutdown and bounds as the WebSocket.
 */

const SEED = {
  users: [{ id: 1, username: 'alice', quota: 12.5 }],
  conversations: [{ userId: 1, id: 1, name: 'Trip plan', model: 'gpt-4o', enableWeb: false, messages: [] }],
};
const LIVE_BALANCE = 'subscription LiveBalance { quota }';
/** What Apollo Client's HttpLink sends as `Accept` for a subscription. */
const MULTIPART_ACCEPT = 'multipart/mixed;boundary="graphql";subscriptionSpec=1.0,application/graphql-response+json,application/json;q=0.9';

const TRANSPORTS = ['websocket', 'sse, distinct connections', 'sse, a single connection', 'sse, GET', 'multipart'] as const;
type Transport = (typeof TRANSPORTS)[number];

/** A subscribe payload as a client sends it: a text, or a trusted document's id beside the empty text. */
type Payload = RequestParams & { documentId?: string };

/** A subscription's first answer as a GraphQL result; a refusal in a transport's own form (an `error` message, an HTTP 400) as its errors. */
type Answer = { data?: unknown; errors?: unknown };

/** A subscription opened over one transport. */
interface OpenSubscription {
  /** Its first answer. */
  first: Promise<Answer>;
  /** The `X-Request-Id` of the HTTP request that subscribed (none over WebSocket). */
  requestId: Promise<string | undefined>;
  /** Ends it, as its client does. */
  stop(): Promise<void>;
}

/** Subscribes with `payload` over `transport`, as that transport's clients do. */
async function subscribeOver(gateway: TestGateway, transport: Transport, payload: Payload): Promise<OpenSubscription> {
  const authorization = `Bearer ${await gateway.token(1)}`;
  if (transport === 'websocket') {
    const socket = await connectAs(gateway.url, authorization);
    const { query, ...rest } = payload;
    const first = socket
      .subscribe(query, undefined, rest)
      .next()
      .then((reply) => (reply.type === 'error' ? { errors: reply.payload } : (reply.payload as Answer)));
    return { first, requestId: Promise.resolve(undefined), stop: async () => void (await socket.close()) };
  }
  if (transport === 'multipart') return subscribeOverMultipart(gateway, authorization, payload);
  if (transport === 'sse, GET') return subscribeOverSseGet(gateway, authorization, payload);
  let subscribed!: (requestId: string | undefined) => void;
  const requestId = new Promise<string | undefined>((resolve) => (subscribed = resolve));
  const client = createSseClient({
    url: `${gateway.url}/graphql/stream`,
    headers: { authorization },
    singleConnection: transport === 'sse, a single connection',
    retryAttempts: 0,
    // The request that subscribes is the POST, in either mode.
    fetchFn: async (...[input, init]: Parameters<typeof fetch>) => {
      const response = await fetch(input, init);
      if (init?.method === 'POST') subscribed(response.headers.get('x-request-id') ?? undefined);
      return response;
    },
  });
  const received = new Received();
  client.subscribe(payload, received.sink);
  const first = received.first(1).then(([answer]) => answer!);
  return { first, requestId, stop: async () => client.dispose() };
}

/** Apollo's multipart subscription over `fetch`: its first part's payload, or an answer that is not multipart, as it is. */
async function subscribeOverMultipart(gateway: TestGateway, authorization: string, payload: Payload): Promise<OpenSubscription> {
  const client = new AbortController();
  const response = await fetch(`${gateway.url}/graphql`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json', accept: MULTIPART_ACCEPT },
    body: JSON.stringify(payload),
    signal: client.signal,
  });
  const requestId = Promise.resolve(response.headers.get('x-request-id') ?? undefined);
  const stop = async () => client.abort();
  if (!response.headers.get('content-type')?.startsWith('multipart/mixed')) {
    // Refused as `/graphql` refuses it, in the media type Apollo Client reads the errors of a 400 from.
    expect([response.status, response.headers.get('content-type')]).toEqual([400, 'application/graphql-response+json; charset=utf-8']);
    return { first: response.json() as Promise<Answer>, requestId, stop };
  }
  // A part is whole once the delimiter after it has come; heartbeats (`{}`) are skipped.
  const part = firstMatch(response, /\r\n\r\n(\{"payload":.*?)\r\n--graphql/s);
  return { first: part.then((text) => (JSON.parse(text) as { payload: Answer }).payload), requestId, stop };
}

/** The protocol's distinct-connection GET, with the request's parameters in the URL (what an EventSource could send). */
async function subscribeOverSseGet(
  gateway: TestGateway,
  authorization: string,
  { query, documentId, extensions }: Payload,
): Promise<OpenSubscription> {
  const parameters = new URLSearchParams({
    query,
    ...(documentId && { documentId }),
    ...(extensions && { extensions: JSON.stringify(extensions) }),
  });
  const client = new AbortController();
  const response = await fetch(`${gateway.url}/graphql/stream?${parameters}`, {
    headers: { authorization, accept: 'text/event-stream' },
    signal: client.signal,
  });
  expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
  return {
    first: firstMatch(response, /event: next\ndata: (.*)\n\n/).then((text) => JSON.parse(text) as Answer),
    requestId: Promise.resolve(response.headers.get('x-request-id') ?? undefined),
    stop: async () => client.abort(),
  };
}

/** The first group of `pattern` in `response`'s body, as soon as it has come; the rest is not read. */
async function firstMatch(response: Response, pattern: RegExp): Promise<string> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  try {
    for (let match = pattern.exec(text); ; match = pattern.exec(text)) {
      if (match) return match[1]!;
      const { value, done } = await reader.read();
      if (done) throw new Error(`the answer ended without ${pattern}: ${JSON.stringify(text)}`);
      text += value;
    }
  } finally {
    await reader.cancel();
  }
}

/** Subscribes with `payload` over `transport` and answers its first result; then lets it go. */
async function firstAnswer(gateway: TestGateway, transport: Transport, payload: Payload): Promise<Answer> {
  const subscription = await subscribeOver(gateway, transport, payload);
  try {
    return await subscription.first;
  } finally {
    await subscription.stop();
  }
}

describe('trusted documents, over every transport alike', () => {
  let open: TestGateway;
  let only: TestGateway;

  beforeAll(async () => {
    const file = join(await mkdtemp(join(tmpdir(), 'trusted-subscriptions-')), 'documents.json');
    await writeFile(file, JSON.stringify({ [documentIdOf(LIVE_BALANCE)]: LIVE_BALANCE }));
    open = await startTestGateway({ PERSISTED_DOCUMENTS: file });
    only = await startTestGateway({ PERSISTED_DOCUMENTS: file, PERSISTED_DOCUMENTS_ONLY: 'true' }, { database: open.testDatabase });
    await open.seed(SEED);
  });
  afterAll(async () => {
    await only?.stop();
    await open?.stop();
  });

  it.each(TRANSPORTS)('over %s, run a subscription named by documentId or persisted-query hash', async (transport) => {
    const id = documentIdOf(LIVE_BALANCE);
    for (const gateway of [open, only]) {
      expect(await firstAnswer(gateway, transport, { query: '', documentId: id })).toEqual({ data: { quota: 12.5 } });
      const byHash = { query: '', extensions: { persistedQuery: { version: 1, sha256Hash: id } } };
      expect(await firstAnswer(gateway, transport, byHash)).toEqual({ data: { quota: 12.5 } });
    }
  });

  it.each(TRANSPORTS)('over %s, answer PERSISTED_QUERY_NOT_FOUND for an id no trusted document has', async (transport) => {
    const unknown = documentIdOf('subscription { quota }');
    for (const gateway of [open, only]) {
      expect(await firstAnswer(gateway, transport, { query: '', documentId: unknown })).toEqual({
        errors: [{ message: 'PersistedQueryNotFound: no trusted document has this id', extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } }],
      });
    }
  });

  it.each(TRANSPORTS)('over %s, refuse a document text where only trusted documents run, even a trusted one’s', async (transport) => {
    for (const query of [LIVE_BALANCE, 'subscription { quota }']) {
      expect(await firstAnswer(only, transport, { query })).toEqual({
        errors: [
          {
            message: 'PersistedQueryOnly: this endpoint runs trusted documents only; send their documentId instead of a query',
            extensions: { code: 'PERSISTED_QUERY_ONLY' },
          },
        ],
      });
    }
    expect(await firstAnswer(open, transport, { query: LIVE_BALANCE })).toEqual({ data: { quota: 12.5 } });
  });
});

describe('an unexpected error in an event, over each HTTP transport', () => {
  const log = captureLog();
  const ROLES = 'subscription Roles { conversationEvents { number conversation { messages { role } } } }';
  let gateway: TestGateway;

  beforeAll(async () => {
    gateway = await startTestGateway({}, { logger: log.logger });
    await gateway.seed(SEED);
  });
  afterAll(() => gateway?.stop());

  const HTTP_TRANSPORTS = TRANSPORTS.filter((transport) => transport !== 'websocket');
  it.each(HTTP_TRANSPORTS.map((transport, index) => [transport, 10 + index] as const))(
    'over %s, names the request that subscribed, as the one log line telling of it does',
    async (transport, number) => {
      const before = await subscriptionsRunning(gateway.url);
      const subscription = await subscribeOver(gateway, transport, { query: ROLES });
      await expect.poll(() => subscriptionsRunning(gateway.url), { timeout: 5_000, interval: 20 }).toBe(before + 1);
      const logged = log.lines().length;
      // Another writer stores a message whose role is no string: the schema cannot show it.
      await gateway.models.conversations.collection.insertOne({
        userId: 1,
        id: number,
        name: 'Broken',
        model: 'gpt-4o',
        enableWeb: false,
        messages: [{ role: { nested: true }, content: 'x' }],
      });
      const answer = await subscription.first;
      const requestId = await subscription.requestId;
      expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
      expect(answer).toEqual({
        data: { conversationEvents: { number, conversation: null } },
        errors: [expect.objectContaining({ extensions: { code: 'INTERNAL_SERVER_ERROR', requestId } })],
      });
      const unexpected = log
        .lines()
        .slice(logged)
        .filter((line) => line.msg === 'unexpected error in a GraphQL operation');
      const door = transport === 'multipart' ? 'multipart' : 'sse';
      expect(unexpected).toEqual([expect.objectContaining({ requestId, door, operation: 'Roles' })]);
      await subscription.stop();
      await expect.poll(() => subscriptionsRunning(gateway.url), { timeout: 5_000, interval: 20 }).toBe(before);
      // The HTTP request's own line, once it ended, carries the same id.
      const route = transport === 'multipart' ? '/graphql' : '/graphql/stream';
      await expect
        .poll(() => log.lines().filter((line) => line.msg === 'request' && line.requestId === requestId), { timeout: 5_000 })
        .toEqual([expect.objectContaining({ route, userId: 1 })]);
    },
  );
});

/** Reserves a single-connection stream (PUT) for the caller of `authorization`; answers its token. */
async function reserveStream(gateway: TestGateway, authorization: string): Promise<string> {
  const reserved = await fetch(`${gateway.url}/graphql/stream`, { method: 'PUT', headers: { authorization } });
  expect(reserved.status).toBe(201);
  return reserved.text();
}

/** Adds a subscription to the single-connection stream of `token`; answers the HTTP status (202: accepted). */
async function subscribeOnStream(gateway: TestGateway, authorization: string, token: string, operationId: string): Promise<number> {
  const posted = await fetch(`${gateway.url}/graphql/stream`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json', 'x-graphql-event-stream-token': token },
    body: JSON.stringify({ query: 'subscription { quota }', extensions: { operationId } }),
  });
  await posted.arrayBuffer();
  return posted.status;
}

describe('stopping with a single-connection event stream open', () => {
  it('completes each of its subscriptions with a complete event, then ends the stream, as with distinct connections', async () => {
    const gateway = await startTestGateway();
    try {
      await gateway.seed(SEED);
      const authorization = `Bearer ${await gateway.token(1)}`;
      const token = await reserveStream(gateway, authorization);
      const stream = await fetch(`${gateway.url}/graphql/stream`, {
        headers: { authorization, accept: 'text/event-stream', 'x-graphql-event-stream-token': token },
      });
      expect(stream.status).toBe(200);
      // Resolves when the stream ends; rejects if it is cut.
      const whole = stream.text();
      expect(await subscribeOnStream(gateway, authorization, token, 'balance')).toBe(202);
      const client = createSseClient({
        url: `${gateway.url}/graphql/stream`,
        headers: { authorization },
        singleConnection: true,
        retryAttempts: 0,
      });
      const received = new Received();
      client.subscribe({ query: 'subscription { quota }' }, received.sink);
      expect(await received.first(1)).toEqual([{ data: { quota: 12.5 } }]);
      await expect.poll(() => subscriptionsRunning(gateway.url), { timeout: 5_000, interval: 20 }).toBe(2);

      await gateway.stop();
      expect(await received.end()).toBe('complete');
      expect(await whole).toMatch(
        /^(:\n\n)+event: next\ndata: \{"id":"balance","payload":\{"data":\{"quota":12\.5\}\}\}\n\n(:\n\n)*event: complete\ndata: \{"id":"balance"\}\n\n$/,
      );
    } finally {
      // Stopping again is safe; it stops one left running by a failure above.
      await gateway.stop();
    }
  });
});

describe('a single-connection stream reserved and never connected', () => {
  const clock = new ManualClock();
  let gateway: TestGateway;

  beforeAll(async () => {
    gateway = await startTestGateway({ SUBSCRIPTIONS_PER_CALLER: '1' }, { clock });
    await gateway.seed(SEED);
  });
  afterAll(() => gateway?.stop());

  it('is let go after 30 s, with its subscriptions: the caller’s count goes back', async () => {
    const authorization = `Bearer ${await gateway.token(1)}`;
    const unused = await reserveStream(gateway, authorization);
    const token = await reserveStream(gateway, authorization);
    // A subscription added to a stream not yet connected runs, its events kept for the connection.
    expect(await subscribeOnStream(gateway, authorization, token, 'balance')).toBe(202);
    await expect.poll(() => subscriptionsRunning(gateway.url), { timeout: 5_000, interval: 20 }).toBe(1);
    expect(await firstAnswer(gateway, 'sse, distinct connections', { query: 'subscription { quota }' })).toEqual({
      errors: [expect.objectContaining({ extensions: { code: 'TOO_MANY_SUBSCRIPTIONS' } })],
    });

    await clock.advance(29_999);
    expect(await subscriptionsRunning(gateway.url)).toBe(1);
    await clock.advance(1);
    expect(await subscriptionsRunning(gateway.url)).toBe(0);
    expect(await firstAnswer(gateway, 'sse, distinct connections', { query: 'subscription { quota }' })).toEqual({
      data: { quota: 12.5 },
    });
    // Both tokens name nothing any more.
    for (const gone of [token, unused]) expect(await subscribeOnStream(gateway, authorization, gone, 'again')).toBe(404);
  });
});
