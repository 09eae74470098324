import { connect, type Socket } from 'node:net';

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { HTTP_SERVER_LIMITS, REFUSED_BODY_DRAIN } from '../../src/limits.js';
import { ManualClock } from '../support/clock.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { startTestSidecar, type TestSidecar } from '../support/sidecar.js';
import { send } from './http.js';

let gateway: TestGateway;
let authorization: string;
const clock = new ManualClock();

beforeAll(async () => {
  // 1 request a second per caller, so 10 a second (and a burst of 20) per address: 30 at one
  // instant of a clock that only the tests move.
  gateway = await startTestGateway({ RATE_LIMIT: '1' }, { clock });
  authorization = `Bearer ${await gateway.token(1)}`;
});
afterAll(() => gateway?.stop());
// Each test's requests from 127.0.0.1 are counted afresh.
beforeEach(() => clock.advance(10_000));

interface Exchange {
  /** The first chunk the server sent, as text. */
  answer: Promise<string>;
  /** Milliseconds from connecting until the server's first chunk. */
  answeredAfterMs: Promise<number>;
  /** Milliseconds from connecting until the server closed the connection. */
  closedAfterMs: Promise<number>;
  socket: Socket;
}

/**
 * A raw connection from `localAddress` to `url` (the gateway unless told) that sends `head`
 * (request line and headers), then a body one byte every `everyMs`, as a slow or malicious client
 * would, until the server closes it.
 */
function trickle(head: string, { everyMs = 500, localAddress = '127.0.0.1', url = gateway.url } = {}): Exchange {
  const { port } = new URL(url);
  const socket = connect({ host: '127.0.0.1', port: Number(port), localAddress });
  const started = performance.now();
  socket.on('error', () => {});
  socket.write(head);
  const dribble = setInterval(() => socket.writable && socket.write('x'), everyMs);
  const firstChunk = new Promise<[string, number]>((resolve) =>
    socket.once('data', (chunk) => resolve([chunk.toString('latin1'), performance.now() - started])),
  );
  const closedAfterMs = new Promise<number>((resolve) =>
    socket.once('close', () => {
      clearInterval(dribble);
      resolve(performance.now() - started);
    }),
  );
  return { answer: firstChunk.then(([text]) => text), answeredAfterMs: firstChunk.then(([, ms]) => ms), closedAfterMs, socket };
}

const post = (path: string, headers: Record<string, string | number>) =>
  `POST ${path} HTTP/1.1\r\nHost: gateway\r\n${Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')}\r\n`;

/**
 * Before, Node kept reading such a body until its request timeout; now the connection ends once
 * the client could read the answer, within `REFUSED_BODY_DRAIN.timeoutMs` of it. A connection
 * closed before Node's request timeout was closed by the gateway: that decides, not how fast the
 * machine ran (the drain's 2 s and the request timeout's 30 s are far apart, and timers never end
 * early). Each test may run past the request timeout, so that a regression fails an assertion.
 */
const PROMPTLY_MS = HTTP_SERVER_LIMITS.requestTimeoutMs;
const PAST_THE_REQUEST_TIMEOUT = { timeout: HTTP_SERVER_LIMITS.requestTimeoutMs + 10_000 };

describe('a request refused before its body is read', PAST_THE_REQUEST_TIMEOUT, () => {
  it('answers 401 on /graphql and closes the connection promptly, however slowly the body comes', async () => {
    const exchange = trickle(post('/graphql', { 'content-type': 'application/json', 'content-length': 100_000 }));
    const answer = await exchange.answer;
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(answer).toMatch(/\r\nConnection: close\r\n/i);
    expect(await exchange.closedAfterMs).toBeLessThan(PROMPTLY_MS);
  });

  it('answers 401 on a REST endpoint in its shape and closes the connection promptly', async () => {
    const exchange = trickle(post('/buy', { 'content-type': 'application/json', 'content-length': 100_000 }));
    const answer = await exchange.answer;
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(answer).toMatch(/\r\nConnection: close\r\n/i);
    expect(answer).toMatch(/\{"status":false,"error":"unauthorized"\}$/);
    expect(await exchange.closedAfterMs).toBeLessThan(PROMPTLY_MS);
  });

  it('answers 413 to a declared body over the limit and closes the connection promptly', async () => {
    const exchange = trickle(post('/graphql', { authorization, 'content-type': 'application/json', 'content-length': 200_000 }));
    expect(await exchange.answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(await exchange.closedAfterMs).toBeLessThan(PROMPTLY_MS);
  });

  it('answers 429 to an address over its limit and closes the connection promptly', async () => {
    const flooder = '127.0.0.77';
    const answers = await Promise.all(Array.from({ length: 40 }, () => send(gateway.url, { path: '/healthz/no', localAddress: flooder })));
    expect(answers.filter((answer) => answer.status === 429)).toHaveLength(10);
    const exchange = trickle(post('/graphql', { authorization, 'content-type': 'application/json', 'content-length': 100_000 }), {
      localAddress: flooder,
    });
    expect(await exchange.answer).toMatch(/^HTTP\/1\.1 429 /);
    expect(await exchange.closedAfterMs).toBeLessThan(PROMPTLY_MS);
  });

  it(`reads a trickled body after the answer for ${REFUSED_BODY_DRAIN.timeoutMs / 1000} s at most, then closes`, async () => {
    const exchange = trickle(post('/graphql', { 'content-type': 'application/json', 'content-length': 100_000 }), { everyMs: 100 });
    expect(await exchange.answer).toMatch(/^HTTP\/1\.1 401 /);
    const heldMs = (await exchange.closedAfterMs) - (await exchange.answeredAfterMs);
    // Long enough for a client to read the answer while still sending (timers never end early),
    // then closed by the drain's own timer rather than by Node's request timeout.
    expect(heldMs).toBeGreaterThanOrEqual(REFUSED_BODY_DRAIN.timeoutMs - 100);
    expect(await exchange.closedAfterMs).toBeLessThan(PROMPTLY_MS);
  });

  it(`cuts a client that keeps sending fast once ${REFUSED_BODY_DRAIN.maxBytes / 2 ** 20} MiB of the body are read`, async () => {
    const { port } = new URL(gateway.url);
    const socket = connect({ host: '127.0.0.1', port: Number(port) });
    let sent = 0;
    socket.on('error', () => {});
    socket.write(post('/buy', { authorization, 'content-type': 'application/json', 'content-length': 2 ** 30 }));
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const flood = () => {
      while (socket.writable && socket.write(chunk)) sent += chunk.length;
    };
    socket.on('drain', flood);
    flood();
    const answer = new Promise<string>((resolve) => socket.once('data', (data) => resolve(data.toString('latin1'))));
    await new Promise((resolve) => socket.once('close', resolve));
    expect(await answer).toMatch(/^HTTP\/1\.1 413 /);
    // Cut by the bytes read, not by the drain's timer: the client got as far as the bound, and no
    // further than the bound and what the sockets' buffers hold in flight, however fast it sends.
    expect(sent).toBeGreaterThanOrEqual(REFUSED_BODY_DRAIN.maxBytes);
    expect(sent).toBeLessThan(2 * REFUSED_BODY_DRAIN.maxBytes);
  });

  it('closes the connection as soon as the client has sent the rest of the body', async () => {
    // A control, refused first, whose body never comes: its drain timer runs out before the other's.
    const control = trickle(post('/buy', { 'content-type': 'application/json', 'content-length': 1_000 }), { everyMs: 60_000 });
    expect(await control.answer).toMatch(/^HTTP\/1\.1 401 /);
    const exchange = trickle(post('/buy', { 'content-type': 'application/json', 'content-length': 1_000 }), { everyMs: 60_000 });
    expect(await exchange.answer).toMatch(/^HTTP\/1\.1 401 /);
    let controlClosed = false;
    void control.closedAfterMs.then(() => (controlClosed = true));
    const ended = new Promise<boolean>((resolve) => {
      exchange.socket.once('end', () => resolve(true));
      exchange.socket.once('error', () => resolve(false));
    });
    exchange.socket.write('x'.repeat(1_000));
    // The server's end of the connection, not a reset: nothing was left unread. It came before the
    // control's timer ran out, so the body's end closed it, not a timer (an order, not a duration).
    expect(await ended).toBe(true);
    await exchange.closedAfterMs;
    expect(controlClosed).toBe(false);
    await control.closedAfterMs;
  });

  it('keeps the connection of a refused request that has no body', async () => {
    const exchange = trickle('GET /quota HTTP/1.1\r\nHost: gateway\r\n\r\n', { everyMs: 60_000 });
    const first = await exchange.answer;
    expect(first).toMatch(/^HTTP\/1\.1 401 /);
    expect(first).not.toMatch(/\r\nConnection: close\r\n/i);
    const second = new Promise<string>((resolve) => exchange.socket.once('data', (chunk) => resolve(chunk.toString('latin1'))));
    exchange.socket.write('GET /healthz HTTP/1.1\r\nHost: gateway\r\n\r\n');
    expect(await second).toMatch(/^HTTP\/1\.1 200 /);
    exchange.socket.destroy();
  });
});

describe('a request to the REST sidecar refused before its body is read', () => {
  let sidecar: TestSidecar;

  beforeAll(async () => {
    sidecar = await startTestSidecar(`${gateway.url}/graphql`);
  });
  afterAll(() => sidecar?.stop());

  const malformed: [string, Record<string, string>][] = [
    ['no credential', {}],
    ['Bearer junk', { authorization: 'Bearer junk' }],
    ['a bare word', { authorization: 'junk' }],
    ['two parts of a token', { authorization: 'Bearer aGVhZA.cGF5bG9hZA' }],
    ['a token with a character outside base64url', { authorization: 'Bearer aGVhZA.cGF5bG9hZA.c2ln+' }],
    ['an API key prefix alone', { authorization: 'sk-' }],
    ['an API key with a space', { authorization: 'sk-alice 0123456789' }],
  ];

  it(
    'answers 401 at once to POST /buy with a missing or malformed credential, however slowly its body comes, as the gateway does',
    PAST_THE_REQUEST_TIMEOUT,
    async () => {
      await Promise.all(
        malformed.map(async ([name, headers]) => {
          const exchange = trickle(post('/buy', { ...headers, 'content-type': 'application/json', 'content-length': 100 }), {
            everyMs: 1_000,
            url: sidecar.url,
          });
          const answer = await exchange.answer;
          expect(answer, name).toMatch(/^HTTP\/1\.1 401 /);
          expect(answer, name).toMatch(/\r\nWWW-Authenticate: Bearer\r\n/i);
          expect(answer, name).toMatch(/\{"status":false,"error":"unauthorized"\}$/);
          // Before, the sidecar read the body first: a byte a second held it until its request
          // timeout, and the answer was a 408. A 401 and a close before that timeout say it was not.
          expect(await exchange.closedAfterMs, name).toBeLessThan(PROMPTLY_MS);
        }),
      );
    },
  );
});

describe('a client that never finishes its headers', () => {
  it(
    `is answered 408 and loses its connection once ${HTTP_SERVER_LIMITS.headersTimeoutMs / 1000} s have passed`,
    async () => {
      const exchange = trickle('GET /quota HTTP/1.1\r\nHost: gateway\r\n', { everyMs: 60_000 });
      expect(await exchange.answer).toMatch(/^HTTP\/1\.1 408 /);
      const closedAfterMs = await exchange.closedAfterMs;
      // Not before the headers timeout (timers never end early), and by it rather than by the request
      // timeout, three times longer: which timer ended it decides, not the machine's speed.
      expect(closedAfterMs).toBeGreaterThanOrEqual(HTTP_SERVER_LIMITS.headersTimeoutMs - 100);
      expect(closedAfterMs).toBeLessThan(HTTP_SERVER_LIMITS.requestTimeoutMs);
    },
    PAST_THE_REQUEST_TIMEOUT.timeout,
  );
});
