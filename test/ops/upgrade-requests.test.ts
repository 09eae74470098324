import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { Socket } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { javaHttpClient, type JavaRequest, skipsJavaTest } from '../support/java.js';
import { exchange, openConnection, rawRequest, type RawResponse } from '../support/raw-http.js';

/** The fields Java's HttpClient (JDK 17, HTTP/2 preferred) adds to every http:// request, in its order, as it spells them. */
const JAVA_UPGRADE: [string, string][] = [
  ['Connection', 'Upgrade, HTTP2-Settings'],
  ['HTTP2-Settings', 'AAEAAEAAAAIAAAAAAAMAAAAAAAQBAAAAAAUAAEAAAAYABgAA'],
  ['Upgrade', 'h2c'],
  ['User-Agent', 'Java-http-client/17.0.15'],
];

/** Requests one keep-alive connection carries, pipelined in batches, to show that each costs the same. */
const REQUESTS_ON_ONE_CONNECTION = 20_000;
const PIPELINED_BATCH = 1_000;

/** Every legacy endpoint, and /graphql both ways, with what each reads; `clean` on a user who has nothing to lose. */
const REQUESTS: { method: string; path: string; body?: string; user?: number }[] = [
  { method: 'GET', path: '/quota' },
  { method: 'GET', path: '/conversation/list' },
  { method: 'GET', path: '/conversation/load?id=1' },
  { method: 'GET', path: '/conversation/delete?id=99' },
  { method: 'POST', path: '/conversation/rename', body: '{"id":1,"name":"Trip plan"}' },
  { method: 'GET', path: '/conversation/clean', user: 2 },
  { method: 'POST', path: '/buy', body: '{"quota":100}' },
  { method: 'POST', path: '/buy', body: '{"quota":' },
  { method: 'GET', path: '/package' },
  { method: 'POST', path: '/graphql', body: '{"query":"{ quota conversations { totalCount } }"}' },
  { method: 'GET', path: '/graphql?query=%7B%20quota%20%7D' },
  { method: 'GET', path: '/healthz' },
  { method: 'GET', path: '/nowhere' },
];

describe('requests that ask for an upgrade the server does not take (HTTP/2 over cleartext, as Java asks)', () => {
  let gateway: TestGateway;
  const tokens: Record<number, string> = {};

  beforeAll(async () => {
    gateway = await startTestGateway();
    await gateway.seed({
      users: [
        { id: 1, username: 'alice', quota: 12.5 },
        { id: 2, username: 'bob', quota: 1 },
      ],
      conversations: [
        { userId: 1, id: 1, name: 'Trip plan', model: 'gpt-4o', enableWeb: false, messages: [{ role: 'user', content: 'hi' }] },
      ],
    });
    for (const user of [1, 2]) tokens[user] = `Bearer ${await gateway.token(user)}`;
  });
  afterAll(() => gateway?.stop());

  const host = () => new URL(gateway.url).host;

  /** The request's head and body, with Java's upgrade fields or without; the body written apart, as Java writes it. */
  function writesOf(request: (typeof REQUESTS)[number], upgrade: [string, string][]): string[] {
    const body = request.body ?? '';
    const headers: [string, string][] = [
      ...upgrade.slice(0, 1),
      ...(body === '' ? [] : ([['Content-Length', String(Buffer.byteLength(body))]] as [string, string][])),
      ['Host', host()],
      ...upgrade.slice(1),
      ['Authorization', tokens[request.user ?? 1]!],
      ...(body === '' ? [] : ([['Content-Type', 'application/json']] as [string, string][])),
    ];
    return [rawRequest(request.method, request.path, headers), ...(body === '' ? [] : [body])];
  }

  const answerOf = ({ status, body }: RawResponse) => ({ status, body });

  it('answers each legacy endpoint and /graphql, GET and POST, exactly as it does without the upgrade', async () => {
    for (const request of REQUESTS) {
      const [plain] = await exchange(gateway.url, writesOf(request, []), 1);
      const [upgraded] = await exchange(gateway.url, writesOf(request, JAVA_UPGRADE), 1);
      expect({ request, ...answerOf(upgraded!) }).toEqual({ request, ...answerOf(plain!) });
      expect(upgraded!.status).not.toBe(101);
    }
    const [quota] = await exchange(gateway.url, writesOf(REQUESTS[0]!, JAVA_UPGRADE), 1);
    expect(quota).toMatchObject({ status: 200, body: '{"status":true,"quota":12.5}' });
  });

  it('keeps the connection alive across such requests, reading each body by its length or its chunks', async () => {
    const chunked = rawRequest('POST', '/graphql', [
      ...JAVA_UPGRADE.slice(0, 1),
      ['Host', host()],
      ...JAVA_UPGRADE.slice(1),
      ['Authorization', tokens[1]!],
      ['Content-Type', 'application/json'],
      ['Transfer-Encoding', 'chunked'],
    ]);
    const query = '{"query":"{ quota }"}';
    const writes = [
      ...writesOf(REQUESTS[0]!, JAVA_UPGRADE),
      `${chunked}${(8).toString(16)}\r\n${query.slice(0, 8)}\r\n`,
      `${(query.length - 8).toString(16)}\r\n${query.slice(8)}\r\n0\r\n\r\n`,
      ...writesOf(REQUESTS[6]!, JAVA_UPGRADE),
      ...writesOf(REQUESTS[1]!, []),
    ];
    const answers = (await exchange(gateway.url, writes, 4)).map(answerOf);
    expect(answers).toEqual([
      { status: 200, body: '{"status":true,"quota":12.5}' },
      { status: 200, body: '{"data":{"quota":12.5}}\n' },
      { status: 200, body: '{"status":false,"error":"not available on this deployment"}' },
      answerOf((await exchange(gateway.url, writesOf(REQUESTS[1]!, []), 1))[0]!),
    ]);
    // The same requests pipelined in one write: answered in order, on the same connection.
    expect((await exchange(gateway.url, [writes.join('')], 4)).map(answerOf)).toEqual(answers);
  });

  it('holds the same listeners for a connection however many such requests it carries, and serves on once it is closed', async () => {
    const connection = await openConnection(gateway.url);
    // Node's own probe of each request the server starts, with the server's end of its connection.
    const closeListeners: number[] = [];
    const probe = (message: unknown) => {
      const { socket } = message as { socket: Socket };
      if (socket.remotePort === connection.localPort) closeListeners.push(socket.listenerCount('close'));
    };
    subscribe('http.server.request.start', probe);
    const statuses = new Map<number, number>();
    try {
      const batch = writesOf({ method: 'GET', path: '/healthz' }, JAVA_UPGRADE).join('').repeat(PIPELINED_BATCH);
      for (let sent = 0; sent < REQUESTS_ON_ONE_CONNECTION; sent += PIPELINED_BATCH) {
        for (const { status } of await connection.exchange([batch], PIPELINED_BATCH)) statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
    } finally {
      unsubscribe('http.server.request.start', probe);
    }
    expect(Object.fromEntries(statuses)).toEqual({ 200: REQUESTS_ON_ONE_CONNECTION });
    expect(closeListeners).toHaveLength(REQUESTS_ON_ONE_CONNECTION);
    expect({ fewest: Math.min(...closeListeners), most: Math.max(...closeListeners) }).toEqual({
      fewest: closeListeners[0],
      most: closeListeners[0],
    });

    // What closing it costs grows with the listeners it holds, and those are counted above: a count
    // decides, not how long the close took on this machine. Another connection is served meanwhile.
    const bystander = await openConnection(gateway.url);
    connection.close();
    const [health] = await bystander.exchange([rawRequest('GET', '/healthz', [['Host', host()]])], 1);
    bystander.close();
    expect(health!.status).toBe(200);
  }, 120_000);

  it('serves a WebSocket upgrade on another path, or by POST, as the ordinary request it also is', async () => {
    const websocket: [string, string][] = [
      ['Connection', 'Upgrade'],
      ['Upgrade', 'websocket'],
      ['Sec-WebSocket-Version', '13'],
      ['Sec-WebSocket-Key', 'dGhlIHNhbXBsZSBub25jZQ=='],
    ];
    const [quota] = await exchange(gateway.url, writesOf(REQUESTS[0]!, websocket), 1);
    expect(answerOf(quota!)).toEqual({ status: 200, body: '{"status":true,"quota":12.5}' });
    const [graphql] = await exchange(gateway.url, writesOf(REQUESTS[9]!, websocket), 1);
    expect(answerOf(graphql!)).toEqual({ status: 200, body: '{"data":{"quota":12.5,"conversations":{"totalCount":1}}}\n' });
  });

  it.skipIf(skipsJavaTest('calling the gateway with java.net.http.HttpClient'))(
    "answers Java's own HttpClient as any other client, GET and POST",
    async () => {
      const requests: JavaRequest[] = [
        ['GET', '/quota', ''],
        ['GET', '/conversation/list', ''],
        ['POST', '/buy', '{"quota":100}'],
        ['POST', '/graphql', '{"query":"{ quota }"}'],
      ];
      const answers = await javaHttpClient(gateway.url, tokens[1]!, requests);
      const expected = [];
      for (const [method, path, body] of requests) {
        const [plain] = await exchange(gateway.url, writesOf({ method, path, body }, []), 1);
        expected.push({ status: plain!.status, body: plain!.body.trimEnd() });
      }
      expect(answers).toEqual(expected);
      expect(answers[0]).toEqual({ status: 200, body: '{"status":true,"quota":12.5}' });
    },
    60_000,
  );
});
