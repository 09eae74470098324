import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { createSsoClient, type SsoClient, SsoUnavailableError } from '../../src/billing/sso-client.js';
import { type SsoStub, startSsoStub } from '../../src/sso-stub/stub-server.js';
import { captureLog } from '../support/captured-log.js';

const SECRET = 'stub-secret-0123456789';

let stub: SsoStub;
let client: SsoClient;

beforeEach(async () => {
  stub = await startSsoStub({
    secret: SECRET,
    users: {
      alice: { wallet: 100, cert: true, teenager: false },
      bob: { wallet: 0.5 },
      carol: { cert: true, teenager: true },
    },
  });
  client = createSsoClient({ url: stub.url, secret: SECRET });
});

afterEach(async () => {
  await stub.close();
});

/** The rejection of `promise`, failing the test when it resolves. */
async function failure(promise: Promise<unknown>): Promise<Error> {
  const error = await promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(Error);
  return error as Error;
}

function expectNoSecret(error: Error): void {
  const cause = error.cause instanceof Error ? `${error.cause.message} ${String(error.cause.cause)}` : String(error.cause);
  expect(`${error.message} ${error.stack} ${cause}`).not.toContain(SECRET);
}

describe('payments', () => {
  it('pays an order and takes exactly the amount from the wallet', async () => {
    await expect(client.pay({ user: 'alice', order: 'order-1', amount: 12.3 })).resolves.toBe('paid');

    expect(stub.wallet('alice')).toBe(87.7);
    expect(stub.paidOrders()).toEqual(['order-1']);
    expect(stub.calls).toEqual([{ path: '/app/payment', body: { user: 'alice', order: 'order-1', amount: 12.3 } }]);
  });

  it('answers insufficient funds and leaves the wallet unchanged', async () => {
    await expect(client.pay({ user: 'bob', order: 'order-1', amount: 0.6 })).resolves.toBe('insufficient-funds');

    expect(stub.wallet('bob')).toBe(0.5);
    expect(stub.paidOrders()).toEqual([]);
  });

  it('charges a repeated order once and returns the first answer every time', async () => {
    await expect(client.pay({ user: 'alice', order: 'order-1', amount: 10 })).resolves.toBe('paid');
    await expect(client.pay({ user: 'alice', order: 'order-1', amount: 10 })).resolves.toBe('paid');
    await expect(client.pay({ user: 'bob', order: 'order-2', amount: 1 })).resolves.toBe('insufficient-funds');
    await expect(client.pay({ user: 'bob', order: 'order-2', amount: 0.1 })).resolves.toBe('insufficient-funds');

    expect(stub.wallet('alice')).toBe(90);
    expect(stub.wallet('bob')).toBe(0.5);
    expect(stub.paidOrders()).toEqual(['order-1']);
  });

  it('sends large amounts with one decimal digit as exact JSON numbers', async () => {
    stub.setUser('dave', { wallet: 10_000 });

    await expect(client.pay({ user: 'dave', order: 'order-1', amount: 99_999 / 10 })).resolves.toBe('paid');

    expect(stub.calls[0]?.body).toEqual({ user: 'dave', order: 'order-1', amount: 9999.9 });
    expect(stub.wallet('dave')).toBe(0.1);
  });

  it('refuses to send an amount that is not a positive number', async () => {
    await expect(client.pay({ user: 'alice', order: 'order-1', amount: 0 })).rejects.toThrow(RangeError);
    await expect(client.pay({ user: 'alice', order: 'order-1', amount: Number.NaN })).rejects.toThrow(RangeError);
    expect(stub.calls).toEqual([]);
  });
});

describe('payment state and certification', () => {
  it('reports an order as paid, unpaid or unknown', async () => {
    await client.pay({ user: 'alice', order: 'paid-order', amount: 1 });
    await client.pay({ user: 'bob', order: 'refused-order', amount: 1 });

    await expect(client.paymentState('paid-order')).resolves.toBe('paid');
    await expect(client.paymentState('refused-order')).resolves.toBe('unpaid');
    await expect(client.paymentState('never-sent')).resolves.toBe('unknown');
    expect(stub.calls.at(-1)).toEqual({ path: '/app/payment/status', body: { order: 'never-sent' } });
  });

  it('reads the certification flags, with both false for an unknown user', async () => {
    await expect(client.certification('alice')).resolves.toEqual({ cert: true, teenager: false });
    await expect(client.certification('carol')).resolves.toEqual({ cert: true, teenager: true });
    await expect(client.certification('nobody')).resolves.toEqual({ cert: false, teenager: false });
    expect(stub.calls.at(-1)).toEqual({ path: '/app/cert', body: { user: 'nobody' } });
  });

  it('accepts a base URL that ends with a slash', async () => {
    const slashed = createSsoClient({ url: `${stub.url}/`, secret: SECRET });

    await expect(slashed.certification('alice')).resolves.toEqual({ cert: true, teenager: false });
    expect(stub.calls.map((call) => call.path)).toEqual(['/app/cert']);
  });
});

describe('an unavailable provider', () => {
  it('treats a refused secret as unavailable without retrying and never names the secret', async () => {
    const wrong = createSsoClient({ url: stub.url, secret: 'not-the-secret' });

    const error = await failure(wrong.certification('alice'));

    expect(error).toBeInstanceOf(SsoUnavailableError);
    expect(error.name).toBe('SsoUnavailableError');
    expect(error.message).toMatch(/HTTP 401/);
    expect(error.message).not.toContain('not-the-secret');
    expect(stub.calls).toHaveLength(1);
  });

  it('gives up after the configured number of attempts when the provider answers 503', async () => {
    stub.setFaults({ down: true });

    const started = performance.now();
    const error = await failure(client.pay({ user: 'alice', order: 'order-1', amount: 1 }));

    expect(performance.now() - started).toBeGreaterThanOrEqual(390); // backs off 100 ms, then 300 ms
    expect(error).toBeInstanceOf(SsoUnavailableError);
    expectNoSecret(error);
    expect(stub.calls).toHaveLength(3);
    expect(stub.wallet('alice')).toBe(100);

    const once = createSsoClient({ url: stub.url, secret: SECRET, attempts: 1 });
    await expect(once.certification('alice')).rejects.toThrow(SsoUnavailableError);
    expect(stub.calls).toHaveLength(4);
  });

  it('gives up within bounded time when the provider is slower than the timeout', async () => {
    stub.setFaults({ delayMs: 5000 });
    const impatient = createSsoClient({ url: stub.url, secret: SECRET, timeoutMs: 200, attempts: 2 });

    const started = performance.now();
    const error = await failure(impatient.paymentState('order-1'));

    // A failure, not the provider's answer (which comes after 5 s): each attempt ended at its timeout.
    expect(error).toBeInstanceOf(SsoUnavailableError);
    expect(error.message).toMatch(/within 200 ms \(2 attempts\)/);
    expect((error as SsoUnavailableError).timeoutMs).toBe(200);
    expectNoSecret(error);
    // Timers never end early, whatever the machine: two timeouts and the pause between them passed.
    expect(performance.now() - started).toBeGreaterThanOrEqual(400);
    expect(stub.calls).toHaveLength(2);
  });

  it('reports its whole call window: every attempt’s timeout plus the pauses between them', async () => {
    expect(createSsoClient({ url: stub.url, secret: SECRET }).callWindowMs).toBe(3 * 3000 + 100 + 300);
    expect(createSsoClient({ url: stub.url, secret: SECRET, timeoutMs: 200, attempts: 2 }).callWindowMs).toBe(2 * 200 + 100);
    expect(createSsoClient({ url: stub.url, secret: SECRET, timeoutMs: 50, attempts: 5 }).callWindowMs).toBe(
      5 * 50 + 100 + 300 + 900 + 900,
    );

    // Within it, the call has failed rather than waited for a provider that answers after 5 s: every
    // attempt ended at its own timeout.
    stub.setFaults({ delayMs: 5000 });
    const impatient = createSsoClient({ url: stub.url, secret: SECRET, timeoutMs: 150, attempts: 3 });
    const error = await failure(impatient.pay({ user: 'alice', order: 'order-1', amount: 1 }));
    expect(error).toBeInstanceOf(SsoUnavailableError);
    expect(error.message).toMatch(/within 150 ms \(3 attempts\)/);
    expect(stub.calls).toHaveLength(3);
  });

  it('retries a lost payment answer with the same order id and is charged exactly once', async () => {
    stub.setFaults({ loseNextPaymentAnswers: 1 });

    await expect(client.pay({ user: 'alice', order: 'order-1', amount: 25 })).resolves.toBe('paid');

    expect(stub.calls.map((call) => call.body)).toEqual([
      { user: 'alice', order: 'order-1', amount: 25 },
      { user: 'alice', order: 'order-1', amount: 25 },
    ]);
    expect(stub.paidOrders()).toEqual(['order-1']);
    expect(stub.wallet('alice')).toBe(75);
  });

  it('treats an answer that is not JSON as unavailable without retrying', async () => {
    stub.setFaults({ garbage: true });

    const error = await failure(client.certification('alice'));

    expect(error).toBeInstanceOf(SsoUnavailableError);
    expect(error.message).toMatch(/not JSON/);
    expect(stub.calls).toHaveLength(1);
  });
});

describe('answers of the wrong shape', () => {
  let server: Server;
  let url: string;
  let answers: { status: number; body: string; location?: string }[];
  let received: number;

  beforeEach(async () => {
    answers = [];
    received = 0;
    server = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        const answer = answers[Math.min(received, answers.length - 1)] ?? { status: 500, body: '' };
        received += 1;
        const location = answer.location === undefined ? {} : { location: answer.location };
        response.writeHead(answer.status, { 'content-type': 'application/json', ...location }).end(answer.body);
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterEach(async () => {
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  });

  it.each([
    ['status false', '{"status":false,"type":true}'],
    ['no type', '{"status":true}'],
    ['a string type', '{"status":true,"type":"true"}'],
    ['a string status', '{"status":"true","type":true}'],
    ['an array', '[true,true]'],
    ['an empty body', ''],
  ])('treats a payment answer with %s as unavailable without retrying', async (_label, body) => {
    answers = [{ status: 200, body }];

    const error = await failure(createSsoClient({ url, secret: SECRET }).pay({ user: 'alice', order: 'o', amount: 1 }));

    expect(error).toBeInstanceOf(SsoUnavailableError);
    expect(received).toBe(1);
  });

  it('treats an unknown payment state, a missing certification flag or status false as unavailable', async () => {
    const sso = createSsoClient({ url, secret: SECRET });

    answers = [{ status: 200, body: '{"status":true,"state":"pending"}' }];
    await expect(sso.paymentState('o')).rejects.toThrow(SsoUnavailableError);
    answers = [{ status: 200, body: '{"status":true,"cert":true}' }];
    await expect(sso.certification('alice')).rejects.toThrow(SsoUnavailableError);
    answers = [{ status: 200, body: '{"status":false,"cert":true,"teenager":true}' }];
    await expect(sso.certification('alice')).rejects.toThrow(SsoUnavailableError);
  });

  it('treats a redirect as unavailable instead of following it', async () => {
    answers = [
      { status: 307, body: '', location: '/elsewhere' },
      { status: 200, body: '{"status":true,"cert":true,"teenager":true}' },
    ];

    await expect(createSsoClient({ url, secret: SECRET }).certification('alice')).rejects.toThrow(/HTTP 307/);
    expect(received).toBe(1);
  });

  it('retries after 429 and 5xx answers and returns the first well-formed answer', async () => {
    answers = [
      { status: 429, body: '' },
      { status: 502, body: '' },
      { status: 200, body: '{"status":true,"cert":false,"teenager":true}' },
    ];

    await expect(createSsoClient({ url, secret: SECRET }).certification('alice')).resolves.toEqual({
      cert: false,
      teenager: true,
    });
    expect(received).toBe(3);
  });
});

describe('failed calls', () => {
  it('are each logged once at warn, with the call, the status or timeout and the order id, never the secret', async () => {
    const log = captureLog();
    const sso = createSsoClient({ url: stub.url, secret: SECRET, timeoutMs: 150, attempts: 2, logger: log.logger });

    stub.setFaults({ down: true });
    await expect(sso.pay({ user: 'alice', order: 'order-down', amount: 1 })).rejects.toThrow(SsoUnavailableError);
    stub.setFaults({ delayMs: 1_000 });
    await expect(sso.paymentState('order-slow')).rejects.toThrow(SsoUnavailableError);
    stub.setFaults({ garbage: true });
    await expect(sso.certification('alice')).rejects.toThrow(SsoUnavailableError);
    stub.setFaults({});
    await sso.pay({ user: 'alice', order: 'order-fine', amount: 1 });

    const failed = 'an SSO provider call failed';
    const logged = log
      .lines()
      .map(({ level, call, orderId, status, timeoutMs, reason, msg }) => ({ level, call, orderId, status, timeoutMs, reason, msg }));
    expect(logged).toEqual([
      { level: 40, call: 'POST /app/payment', orderId: 'order-down', status: 503, reason: 'answered HTTP 503 (2 attempts)', msg: failed },
      {
        level: 40,
        call: 'POST /app/payment/status',
        orderId: 'order-slow',
        timeoutMs: 150,
        reason: 'did not answer within 150 ms (2 attempts)',
        msg: failed,
      },
      { level: 40, call: 'POST /app/cert', reason: 'answered something that is not JSON', msg: failed },
    ]);
    expect(log.text()).not.toContain(SECRET);
  });

  it('tell a refused secret apart from an outage, and a provider that cannot be reached', async () => {
    const log = captureLog();
    const wrong = createSsoClient({ url: stub.url, secret: 'not-the-secret', logger: log.logger });
    await expect(wrong.paymentState('order-1')).rejects.toThrow(/HTTP 401/);
    const address = stub.url;
    await stub.close();
    stub = await startSsoStub({ secret: SECRET });
    const gone = createSsoClient({ url: address, secret: SECRET, attempts: 1, logger: log.logger });
    await expect(gone.pay({ user: 'alice', order: 'order-2', amount: 1 })).rejects.toThrow(/could not be reached/);

    expect(log.lines()).toEqual([
      expect.objectContaining({
        level: 40,
        call: 'POST /app/payment/status',
        orderId: 'order-1',
        status: 401,
        msg: 'the SSO provider refused our credentials: check SSO_SECRET',
      }),
      expect.objectContaining({ level: 40, call: 'POST /app/payment', orderId: 'order-2', reason: 'could not be reached (1 attempt)' }),
    ]);
    expect(log.text()).not.toContain('not-the-secret');
  });
});
