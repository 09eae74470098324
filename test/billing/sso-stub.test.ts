import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { readStubFile } from '../../src/sso-stub/stub-file.js';
import { type SsoStub, startSsoStub } from '../../src/sso-stub/stub-server.js';
import { eventually } from './official.js';

const SECRET = 'stub-secret';

describe('the SSO stub server', () => {
  let stub: SsoStub;

  beforeEach(async () => {
    stub = await startSsoStub({ secret: SECRET, users: { alice: { wallet: 1, cert: true } } });
  });

  afterEach(async () => {
    await stub.close();
  });

  function post(path: string, body: string, authorization = `Bearer ${SECRET}`): Promise<Response> {
    return fetch(`${stub.url}${path}`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body,
    });
  }

  it('refuses a request without the bearer secret with 401 and changes nothing', async () => {
    const response = await post('/app/payment', '{"user":"alice","order":"o","amount":1}', `Bearer ${SECRET}x`);

    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer');
    expect(await response.json()).toEqual({ status: false, message: 'unauthorized' });
    expect(stub.wallet('alice')).toBe(1);
    expect(stub.calls).toHaveLength(1);
  });

  it('answers 400 with status false to bodies that are not JSON or have the wrong shape', async () => {
    for (const body of [
      '{"user":"alice",',
      '{"user":"alice","order":"o"}',
      '{"user":"alice","order":"o","amount":"1"}',
      '{"user":"alice","order":"o","amount":-1}',
      '{"user":"alice","order":"o","amount":0.001}',
      '{"user":"","order":"o","amount":1}',
    ]) {
      const response = await post('/app/payment', body);
      expect(response.status, body).toBe(400);
      expect(await response.json()).toMatchObject({ status: false });
    }
    expect(stub.wallet('alice')).toBe(1);
    expect(stub.paidOrders()).toEqual([]);
    expect(stub.calls[0]).toEqual({ path: '/app/payment', body: '{"user":"alice",' });
  });

  it('answers 404 to an unknown path and 405 with Allow to a GET', async () => {
    const unknown = await post('/app/refund', '{}');
    expect(unknown.status).toBe(404);

    const get = await fetch(`${stub.url}/app/cert`, { headers: { authorization: `Bearer ${SECRET}` } });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
  });

  it('keeps the wallet exact across many small charges', async () => {
    for (let index = 0; index < 10; index += 1) {
      const response = await post('/app/payment', JSON.stringify({ user: 'alice', order: `o${index}`, amount: 0.1 }));
      expect(await response.json()).toEqual({ status: true, type: true });
    }
    const eleventh = await post('/app/payment', JSON.stringify({ user: 'alice', order: 'o10', amount: 0.01 }));

    expect(await eleventh.json()).toEqual({ status: true, type: false });
    expect(stub.wallet('alice')).toBe(0);
    expect(stub.paidOrders()).toHaveLength(10);

    stub.setUser('erin', { wallet: 1.15 });
    await post('/app/payment', JSON.stringify({ user: 'erin', order: 'e1', amount: 0.29 }));
    expect(stub.wallet('erin')).toBe(0.86);
  });

  it('charges a payment whose answer it was told to lose, then answers the repeat normally', async () => {
    stub.setFaults({ loseNextPaymentAnswers: 1 });
    const body = '{"user":"alice","order":"o","amount":0.25}';

    await expect(post('/app/payment', body)).rejects.toThrow();
    expect(stub.wallet('alice')).toBe(0.75);
    expect(stub.paidOrders()).toEqual(['o']);

    const repeat = await post('/app/payment', body);
    expect(await repeat.json()).toEqual({ status: true, type: true });
    expect(stub.wallet('alice')).toBe(0.75);
  });

  it('keeps the first answer to an order even when a repeat asks for a different amount', async () => {
    const first = await post('/app/payment', '{"user":"alice","order":"o","amount":0.4}');
    const repeat = await post('/app/payment', '{"user":"alice","order":"o","amount":0.5}');

    expect(await first.json()).toEqual({ status: true, type: true });
    expect(await repeat.json()).toEqual({ status: true, type: true });
    expect(stub.wallet('alice')).toBe(0.6);
  });

  it('updates only the given fields of a user and rejects invalid ones', async () => {
    stub.setUser('alice', { teenager: true });
    stub.setUser('erin', { wallet: 2.25 });

    expect(stub.wallet('alice')).toBe(1);
    expect(stub.wallet('erin')).toBe(2.25);
    const cert = await post('/app/cert', '{"user":"alice"}');
    expect(await cert.json()).toEqual({ status: true, cert: true, teenager: true });
    expect(() => stub.setUser('alice', { wallet: -1 })).toThrow(/must not be negative/);
    expect(() => stub.setUser('alice', { wallet: 0.123 })).toThrow(/two decimal digits/);
  });

  it('acts on a payment received during a stall only once the stall is over, answering unknown to status queries meanwhile', async () => {
    stub.setFaults({ stallMs: 300 });
    const started = performance.now();
    const payment = post('/app/payment', '{"user":"alice","order":"o","amount":0.25}');
    await eventually(async () => (stub.stalled() === 1 ? true : undefined), 2_000, 'the payment to arrive');
    stub.setFaults({});

    expect(await (await post('/app/payment/status', '{"order":"o"}')).json()).toEqual({ status: true, state: 'unknown' });
    expect(stub.wallet('alice')).toBe(1);
    expect(await (await payment).json()).toEqual({ status: true, type: true });
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    expect(stub.stalled()).toBe(0);
    expect(await (await post('/app/payment/status', '{"order":"o"}')).json()).toEqual({ status: true, state: 'paid' });
    expect(stub.charges()).toEqual([{ order: 'o', user: 'alice', amount: 0.25 }]);
  });

  it('charges an order it had refused when it changes its mind, and reports it paid from then on', async () => {
    await post('/app/payment', '{"user":"alice","order":"big","amount":5}');
    expect(await (await post('/app/payment/status', '{"order":"big"}')).json()).toEqual({ status: true, state: 'unpaid' });
    expect(() => stub.changeMind('big')).toThrow(/cannot pay/);
    stub.setUser('alice', { wallet: 7 });

    stub.changeMind('big');

    expect(stub.wallet('alice')).toBe(2);
    expect(await (await post('/app/payment/status', '{"order":"big"}')).json()).toEqual({ status: true, state: 'paid' });
    expect(stub.charges()).toEqual([{ order: 'big', user: 'alice', amount: 5 }]);
    expect(() => stub.changeMind('big')).toThrow(/was not refused/);
  });

  it('answers every request with 503 while down and recovers when the fault is cleared', async () => {
    stub.setFaults({ down: true });
    expect((await post('/app/cert', '{"user":"alice"}')).status).toBe(503);

    stub.setFaults({});
    expect((await post('/app/cert', '{"user":"alice"}')).status).toBe(200);
  });
});

describe('the SSO stub file', () => {
  it('rejects a misspelt field and names the file', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'sso-stub-'));
    const file = join(directory, 'users.json');
    await writeFile(file, '{"users":{"alice":{"walet":1}}}');

    await expect(readStubFile(file)).rejects.toThrow(/users\.json is not a valid SSO stub file[\s\S]*walet/);
  });

  it('reads the example file', async () => {
    const users = await readStubFile('examples/sso-stub.json');

    expect(users.alice).toEqual({ wallet: 100, cert: true, teenager: false });
    expect(users.bob).toEqual({ wallet: 0.5, cert: false, teenager: false });
  });
});

describe('the sso-stub command', () => {
  async function freePort(): Promise<number> {
    const server = createServer().listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    server.close();
    await once(server, 'close');
    return port;
  }

  it('prints its URL, serves the example users and exits 0 on SIGTERM', async () => {
    const port = await freePort();
    const child = spawn(
      process.execPath,
      ['dist/cli/sso-stub.js', '--port', String(port), '--file', 'examples/sso-stub.json', '--secret', 's'],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const exited = once(child, 'exit');
    try {
      const lines = createInterface({ input: child.stdout });
      const [line] = (await once(lines, 'line')) as [string];
      expect(line).toContain(`http://127.0.0.1:${port}`);

      const response = await fetch(`http://127.0.0.1:${port}/app/cert`, {
        method: 'POST',
        headers: { authorization: 'Bearer s', 'content-type': 'application/json' },
        body: '{"user":"alice"}',
      });
      expect(await response.json()).toEqual({ status: true, cert: true, teenager: false });

      child.kill('SIGTERM');
      const [code, signal] = (await exited) as [number | null, NodeJS.Signals | null];
      expect({ code, signal }).toEqual({ code: 0, signal: null });
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('runs as `npm run sso-stub -- --port N --file FILE` with no secret, accepting any bearer secret but not none', async () => {
    const port = await freePort();
    const environment = { ...process.env };
    delete environment.SSO_SECRET;
    const child = spawn(process.execPath, ['dist/cli/sso-stub.js', '--port', String(port), '--file', 'examples/sso-stub.json'], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: environment,
    });
    const exited = once(child, 'exit');
    try {
      const lines = createInterface({ input: child.stdout });
      const [line] = (await once(lines, 'line')) as [string];
      expect(line).toContain(`http://127.0.0.1:${port}`);
      const cert = (authorization?: string) =>
        fetch(`http://127.0.0.1:${port}/app/cert`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
          body: '{"user":"alice"}',
        });
      expect((await cert('Bearer whatever-the-gateway-has')).status).toBe(200);
      expect((await cert()).status).toBe(401);
      child.kill('SIGTERM');
      const [code] = (await exited) as [number | null];
      expect(code).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
