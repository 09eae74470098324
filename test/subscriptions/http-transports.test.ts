import { type IncomingMessage, request } from 'node:http';

import { ApolloClient, gql, HttpLink, InMemoryCache } from '@apollo/client';
import { Client as UrqlClient, fetchExchange, subscriptionExchange } from '@urql/core';
import { createClient as createSseClient, type ExecutionResult } from 'graphql-sse';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { captureLog } from '../support/captured-log.js';
import { startTestDatabase, type TestDatabase } from '../support/database.js';
import { graphql, startTestGateway, type TestGateway } from '../support/gateway.js';
import { sample, scrapeMetrics } from '../support/metrics.js';
import { connectAs } from '../support/websocket.js';
import { apolloSubscription, Received, subscriptionsRunning } from './helpers.js';

const SEED = {
  users: [
    { id: 1, username: 'alice', quota: 12.5 },
    { id: 2, username: 'bob', quota: 3 },
  ],
  conversations: [{ userId: 1, id: 1, name: 'Trip plan', model: 'gpt-4o', enableWeb: false, messages: [] }],
};
const EVENTS = 'subscription Events { conversationEvents { kind number conversation { name } } }';

let gateway: TestGateway;
let alice: string;

beforeAll(async () => {
  gateway = await startTestGateway();
  await gateway.seed(SEED);
  alice = `Bearer ${await gateway.token(1)}`;
});
afterAll(() => gateway?.stop());

function sseClient(singleConnection: boolean, authorization = alice) {
  return createSseClient({
    url: `${gateway.url}/graphql/stream`,
    headers: { authorization },
    singleConnection,
    retryAttempts: 0,
  });
}

/** Waits until the gateway counts `count` more running subscriptions than `before`. */
async function running(before: number, count = 1): Promise<void> {
  await expect.poll(() => subscriptionsRunning(gateway.url), { timeout: 5_000, interval: 20 }).toBe(before + count);
}

describe('GraphQL over Server-Sent Events (graphql-sse), with its own client', () => {
  it.each([
    ['distinct connections', false],
    ['a single connection', true],
  ])('sends the balance now, then each change another writer makes, over %s', async (_mode, single) => {
    const client = sseClient(single);
    const received = new Received<{ quota: number }>();
    const before = await subscriptionsRunning(gateway.url);
    const dispose = client.subscribe({ query: 'subscription { quota }' }, received.sink);
    expect(await received.first(1)).toEqual([{ data: { quota: 12.5 } }]);
    await running(before);
    await gateway.models.users.updateOne({ id: 1 }, { $inc: { balanceMicros: 1_000_000 } });
    expect((await received.first(2))[1]).toEqual({ data: { quota: 13.5 } });
    dispose();
    await running(before, 0);
    client.dispose();
    await gateway.models.users.updateOne({ id: 1 }, { $inc: { balanceMicros: -1_000_000 } });
  });

  it('refuses what HTTP refuses, in the same words, as the stream’s last event', async () => {
    const client = sseClient(false);
    const received = new Received();
    client.subscribe({ query: 'subscription { nope }' }, received.sink);
    const [answer] = await received.first(1);
    expect(answer!.errors).toEqual([
      expect.objectContaining({
        message: 'Cannot query field "nope" on type "Subscription".',
        extensions: { code: 'GRAPHQL_VALIDATION_FAILED' },
      }),
    ]);
    expect(await received.end()).toBe('complete');
    const query = new Received();
    client.subscribe({ query: '{ quota }' }, query.sink);
    expect((await query.first(1))[0]!.errors).toEqual([
      expect.objectContaining({
        message: 'only subscriptions are served over Server-Sent Events; send queries and mutations to POST /graphql',
        extensions: { code: 'BAD_REQUEST' },
      }),
    ]);
    client.dispose();
  });

  it('answers with the event stream’s media type, never to be stored', async () => {
    const answer = await fetch(`${gateway.url}/graphql/stream`, {
      method: 'POST',
      headers: { authorization: alice, accept: 'text/event-stream', 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'subscription { nope }' }),
    });
    expect([answer.status, answer.headers.get('content-type'), answer.headers.get('cache-control')]).toEqual([
      200,
      'text/event-stream; charset=utf-8',
      'no-store',
    ]);
    expect(await answer.text()).toMatch(/event: next\ndata: \{"errors":\[.*GRAPHQL_VALIDATION_FAILED.*\]\}\n\n(:\n\n)*event: complete\n/s);
  });

  it('answers 401 without credentials, before anything is read', async () => {
    const answer = await fetch(`${gateway.url}/graphql/stream`, {
      method: 'POST',
      headers: { accept: 'text/event-stream', 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'subscription { quota }' }),
    });
    expect(answer.status).toBe(401);
    expect(((await answer.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code).toBe('UNAUTHENTICATED');
  });

  it('never lets one caller use another’s single-connection stream', async () => {
    const reserved = await fetch(`${gateway.url}/graphql/stream`, { method: 'PUT', headers: { authorization: alice } });
    expect(reserved.status).toBe(201);
    const token = await reserved.text();
    const bobs = await fetch(`${gateway.url}/graphql/stream`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${await gateway.token(2)}`,
        'content-type': 'application/json',
        'x-graphql-event-stream-token': token,
      },
      body: JSON.stringify({ query: 'subscription { quota }', extensions: { operationId: 'bob' } }),
    });
    expect(bobs.status).toBe(404);
  });
});

describe("Apollo's multipart HTTP subscriptions on POST /graphql", () => {
  it('reach Apollo Client 4’s HttpLink: the balance now, then each change', async () => {
    const client = new ApolloClient({
      link: new HttpLink({ uri: `${gateway.url}/graphql`, headers: { authorization: alice } }),
      cache: new InMemoryCache(),
    });
    const received = new Received<{ quota: number }>();
    const before = await subscriptionsRunning(gateway.url);
    const subscription = client
      .subscribe<{ quota: number }>({ query: gql('subscription Balance { quota }') })
      .subscribe({ next: (result) => received.sink.next(result as ExecutionResult<{ quota: number }, unknown>) });
    expect((await received.first(1))[0]!.data).toEqual({ quota: 12.5 });
    await running(before);
    await gateway.models.users.updateOne({ id: 1 }, { $inc: { balanceMicros: 500_000 } });
    expect((await received.first(2))[1]!.data).toEqual({ quota: 13 });
    subscription.unsubscribe();
    await running(before, 0);
    await gateway.models.users.updateOne({ id: 1 }, { $inc: { balanceMicros: -500_000 } });
  });

  it('leave queries and mutations with that Accept to Apollo Server', async () => {
    const answer = await fetch(`${gateway.url}/graphql`, {
      method: 'POST',
      headers: {
        authorization: alice,
        'content-type': 'application/json',
        accept: 'multipart/mixed;boundary="graphql";subscriptionSpec="1.0",application/json',
      },
      body: JSON.stringify({ query: '{ quota }' }),
    });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ data: { quota: 12.5 } });
  });

  it('write the multipart framing Apollo Router writes, a refusal as a payload with errors', async () => {
    const answer = await fetch(`${gateway.url}/graphql`, {
      method: 'POST',
      headers: { authorization: alice, 'content-type': 'application/json', accept: 'multipart/mixed;subscriptionSpec=1.0' },
      body: JSON.stringify({ query: `subscription { conversationEvents { conversation { messages { ${'role '.repeat(500)} } } } }` }),
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('multipart/mixed;boundary="graphql";subscriptionSpec="1.0"');
    expect(answer.headers.get('cache-control')).toBe('no-store');
    const body = await answer.text();
    expect(body).toMatch(
      /^\r\n--graphql\r\ncontent-type: application\/json; charset=utf-8\r\n\r\n\{"payload":\{"errors":\[.*\]\}\}\r\n--graphql--\r\n$/s,
    );
    expect(body).toContain('Operation cost limit of 5000 exceeded');
  });
});

describe('urql over Server-Sent Events', () => {
  it('gets conversation events from any writer through its subscription exchange', async () => {
    const sse = sseClient(false);
    const client = new UrqlClient({
      url: `${gateway.url}/graphql`,
      fetchOptions: { headers: { authorization: alice } },
      exchanges: [
        fetchExchange,
        subscriptionExchange({
          forwardSubscription(request) {
            return { subscribe: (sink) => ({ unsubscribe: sse.subscribe({ ...request, query: request.query ?? '' }, sink) }) };
          },
        }),
      ],
    });
    const received = new Received();
    const before = await subscriptionsRunning(gateway.url);
    const subscription = client.subscription(EVENTS, {}).subscribe((result) => received.sink.next({ data: result.data }));
    await running(before);
    const renamed = await graphql(gateway, 'mutation { renameConversationByNumber(number: 1, name: "Lisbon") { ok } }', {
      authorization: alice,
    });
    expect(renamed.body.data).toEqual({ renameConversationByNumber: { ok: true } });
    expect((await received.first(1))[0]).toEqual({
      data: { conversationEvents: { kind: 'UPDATED', number: 1, conversation: { name: 'Lisbon' } } },
    });
    subscription.unsubscribe();
    sse.dispose();
    await running(before, 0);
  });
});

describe('every transport under the same caps, metrics, writers and shutdown', () => {
  let database: TestDatabase;
  let capped: TestGateway;
  let other: TestGateway;

  beforeAll(async () => {
    // The engine outlives both instances: the test stops the first while the second still runs on it.
    database = await startTestDatabase();
    capped = await startTestGateway({ SUBSCRIPTIONS_PER_CALLER: '3' }, { database });
    await capped.seed(SEED);
    // A second instance on the same database: its writes reach the first one's subscribers.
    other = await startTestGateway({}, { database });
  });
  afterAll(async () => {
    await other?.stop();
    await capped?.stop();
    await database?.stop();
  });

  it('counts one caller’s subscriptions over WebSocket, SSE and multipart against one cap, labels them by transport, and sends each the other instance’s writes', async () => {
    const authorization = `Bearer ${await capped.token(1)}`;
    const socket = await connectAs(capped.url, authorization);
    const overWebSocket = socket.subscribe(EVENTS);
    const sse = createSseClient({ url: `${capped.url}/graphql/stream`, headers: { authorization }, retryAttempts: 0 });
    const overSse = new Received();
    sse.subscribe({ query: EVENTS }, overSse.sink);
    const overMultipart = apolloSubscription(capped.url, authorization, EVENTS);
    await expect.poll(() => subscriptionsRunning(capped.url), { timeout: 5_000, interval: 20 }).toBe(3);

    const metrics = await scrapeMetrics(capped.url);
    for (const transport of ['websocket', 'sse', 'multipart']) {
      expect(sample(metrics, 'graphql_subscriptions_active', { field: 'conversationEvents', transport })).toBe(1);
    }
    expect(sample(metrics, 'graphql_event_streams_open', { transport: 'sse' })).toBe(1);
    expect(sample(metrics, 'graphql_event_streams_open', { transport: 'multipart' })).toBe(1);
    const fourth = new Received();
    sse.subscribe({ query: 'subscription { quota }' }, fourth.sink);
    expect((await fourth.first(1))[0]!.errors).toEqual([
      expect.objectContaining({
        extensions: { code: 'TOO_MANY_SUBSCRIPTIONS' },
        message: expect.stringMatching(/at most 3 at once per caller/),
      }),
    ]);

    const renamed = await graphql(other, 'mutation { renameConversationByNumber(number: 1, name: "From the other one") { ok } }', {
      authorization,
    });
    expect(renamed.body.data).toEqual({ renameConversationByNumber: { ok: true } });
    const event = { data: { conversationEvents: { kind: 'UPDATED', number: 1, conversation: { name: 'From the other one' } } } };
    expect((await overWebSocket.next()).payload).toEqual(event);
    expect((await overSse.first(1))[0]).toEqual(event);
    expect((await overMultipart.received.first(1))[0]!.data).toMatchObject(event.data);

    // Stopping completes each stream, rather than cutting it.
    await capped.stop();
    expect(await overSse.end()).toBe('complete');
    expect(await overMultipart.received.end()).toBe('complete');
    expect((await socket.closed).code).toBe(1001);
  });
});

describe('an HTTP subscriber that does not read what it is sent', () => {
  const log = captureLog();
  let bounded: TestGateway;

  beforeAll(async () => {
    bounded = await startTestGateway({ WEBSOCKET_MAX_BUFFERED_BYTES: '1024' }, { logger: log.logger });
    await bounded.seed({
      users: [{ id: 1, username: 'alice', quota: 1 }],
      conversations: [
        { userId: 1, id: 1, name: 'Long', model: 'gpt-4o', enableWeb: false, messages: [{ role: 'user', content: 'x'.repeat(200_000) }] },
      ],
    });
  });
  afterAll(() => bounded?.stop());

  /** Opens a subscription over `transport` whose client reads nothing past the response's head. */
  async function unread(transport: 'sse' | 'multipart'): Promise<{ closed: Promise<void> }> {
    const headers = {
      authorization: `Bearer ${await bounded.token(1)}`,
      'content-type': 'application/json',
      accept: transport === 'sse' ? 'text/event-stream' : 'multipart/mixed;subscriptionSpec=1.0',
    };
    const path = transport === 'sse' ? '/graphql/stream' : '/graphql';
    const outgoing = request(`${bounded.url}${path}`, { method: 'POST', headers });
    const closed = new Promise<void>((resolve) => outgoing.once('close', () => resolve()));
    outgoing.on('error', () => {});
    const answered = new Promise<IncomingMessage>((resolve) => outgoing.once('response', resolve));
    outgoing.end(JSON.stringify({ query: 'subscription { conversationEvents { conversation { messages { content } } } }' }));
    const response = await answered;
    response.on('error', () => {});
    response.pause();
    return { closed };
  }

  it.each(['sse', 'multipart'] as const)(
    'over %s, is dropped once the server holds more than WEBSOCKET_MAX_BUFFERED_BYTES for it, and its end logged once',
    async (transport) => {
      const before = await subscriptionsRunning(bounded.url);
      const { closed } = await unread(transport);
      await expect.poll(() => subscriptionsRunning(bounded.url), { timeout: 5_000, interval: 20 }).toBe(before + 1);
      const logged = log.lines().length;
      // The server's drop, as it logs it: a client that reads nothing does not see its connection close until it reads.
      const dropped = () =>
        log
          .lines()
          .slice(logged)
          .some((line) => line.endedFor === 'unread data');
      // Each event carries 200 kB: past what the kernel's buffers on both ends take, the server holds it.
      for (let write = 0; write < 300 && !dropped(); write += 1) {
        await bounded.models.conversations.updateOne({ userId: 1, id: 1 }, { $set: { name: `Rename ${write}` } });
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      void closed;
      await expect.poll(() => subscriptionsRunning(bounded.url), { timeout: 5_000 }).toBe(before);
      expect(sample(await scrapeMetrics(bounded.url), 'graphql_event_streams_open', { transport })).toBe(0);
      expect(log.lines().slice(logged)).toContainEqual(
        expect.objectContaining({ msg: 'event stream ended by the server: unread data', transport, endedFor: 'unread data' }),
      );
    },
    60_000,
  );
});
