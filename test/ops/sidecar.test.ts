import { createServer, type Socket } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { secretKey, signAccessToken } from '../../src/auth/access-token.js';
import type { RunningSidecar } from '../../src/rest/sidecar.js';
import { type CapturedLog, captureLog, startGatewayWithCapturedLog } from '../support/captured-log.js';
import { eventually } from '../support/eventually.js';
import { TEST_JWT_SECRET } from '../support/gateway.js';
import { spawnNode } from '../support/node-process.js';
import { exchange, rawRequest, type RawResponse } from '../support/raw-http.js';
import { startTestSidecar } from '../support/sidecar.js';

let gateway: Awaited<ReturnType<typeof startGatewayWithCapturedLog>>;
let sidecar: RunningSidecar;
let sidecarLog: CapturedLog;

beforeAll(async () => {
  gateway = await startGatewayWithCapturedLog();
  sidecarLog = captureLog();
  sidecar = await startTestSidecar(`${gateway.url}/graphql`, { logger: sidecarLog.logger });
});
afterAll(async () => {
  await sidecar?.stop();
  await gateway?.stop();
});

describe('the sidecar', () => {
  it('logs each request with the same request id as the gateway it forwards to', async () => {
    const token = await signAccessToken(secretKey(TEST_JWT_SECRET), 5);
    const response = await fetch(`${sidecar.url}/quota`, { headers: { authorization: `Bearer ${token}` } });
    expect(response.status).toBe(200);
    const requestId = response.headers.get('x-request-id');
    // Each server writes its line once its answer is out, which may be just after the client read it.
    const here = await eventually(() => sidecarLog.lines().find((line) => line.requestId === requestId), 2_000, 'the sidecar’s line');
    const there = await eventually(() => gateway.log.lines().find((line) => line.requestId === requestId), 2_000, 'the gateway’s line');
    expect(here).toMatchObject({ msg: 'request', method: 'GET', route: '/quota', status: 200 });
    expect(there).toMatchObject({ msg: 'request', method: 'POST', route: '/graphql', operation: 'Quota', status: 200, userId: 5 });
  });

  it('serves /healthz, /readyz, /metrics and the gateway’s /openapi.json', async () => {
    expect((await fetch(`${sidecar.url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${sidecar.url}/readyz`);
    expect([ready.status, await ready.json()]).toEqual([200, { status: 'ready' }]);
    const metrics = await (await fetch(`${sidecar.url}/metrics`)).text();
    expect(metrics).toMatch(/^http_requests_total\{method="GET",route="\/quota",status="200"\} 1$/m);
    expect(metrics).not.toMatch(/^mongodb_up/m);
    expect(await (await fetch(`${sidecar.url}/openapi.json`)).json()).toEqual(await (await fetch(`${gateway.url}/openapi.json`)).json());
  });

  it('answers every request pipelined on one connection, whether it asks for an upgrade or not', async () => {
    const host = new URL(sidecar.url).host;
    const upgrades: Record<string, [string, string][]> = {
      none: [],
      h2c: [
        ['Connection', 'Upgrade, HTTP2-Settings'],
        ['Upgrade', 'h2c'],
        ['HTTP2-Settings', 'AAEAAEAAAAIAAAABAAMAAABkAAQBAAAAAAUAAEAA'],
      ],
      websocket: [
        ['Connection', 'Upgrade'],
        ['Upgrade', 'websocket'],
        ['Sec-WebSocket-Version', '13'],
        ['Sec-WebSocket-Key', 'dGhlIHNhbXBsZSBub25jZQ=='],
      ],
    };
    const request = (path: string, upgrade: string) => rawRequest('GET', path, [['Host', host], ...upgrades[upgrade]!]);
    // A 404 closes its connection: it comes last.
    const sequence: [string, string][] = [
      ['/healthz', 'h2c'],
      ['/healthz', 'none'],
      ['/openapi.json', 'websocket'],
      ['/healthz', 'h2c'],
      ['/nowhere', 'websocket'],
    ];
    const answerOf = ({ status, body }: RawResponse) => ({ status, body });
    const alone = await Promise.all(
      sequence.map(async ([path]) => answerOf((await exchange(sidecar.url, [request(path, 'none')], 1))[0]!)),
    );
    const writes = [sequence.map(([path, upgrade]) => request(path, upgrade)).join('')];
    const pipelined = await exchange(sidecar.url, writes, sequence.length, 5_000);
    expect(pipelined.map(answerOf)).toEqual(alone);
    expect(alone.map(({ status }) => status)).toEqual([200, 200, 200, 200, 404]);
  });

  it('answers /readyz 503 while its upstream does not answer', async () => {
    const lonely = await startGatewayWithCapturedLog();
    const front = await startTestSidecar(`${lonely.url}/graphql`);
    try {
      await lonely.stop();
      const response = await fetch(`${front.url}/readyz`);
      expect([response.status, await response.json()]).toEqual([503, { status: 'upstream unavailable' }]);
    } finally {
      await front.stop();
    }
  });

  it('does not start when the upstream URL is not a GraphQL endpoint, nor when nothing answers there', async () => {
    await expect(startTestSidecar(gateway.url)).rejects.toThrow(
      `upstream ${gateway.url}/ answered HTTP 404 without a GraphQL response: is /graphql missing from the URL?`,
    );
    const closed = createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => closed.once('listening', resolve));
    const { port } = closed.address() as { port: number };
    await new Promise((resolve) => closed.close(resolve));
    await expect(startTestSidecar(`http://127.0.0.1:${port}/graphql`, { timeoutMs: 1_000 })).rejects.toThrow(
      `upstream http://127.0.0.1:${port}/graphql refused the connection: nothing listens there (connect ECONNREFUSED 127.0.0.1:${port})`,
    );
  });

  it('tells an upstream that takes the request and never answers from one that refuses it', async () => {
    const accepted: Socket[] = [];
    const silent = createServer((socket) => void accepted.push(socket)).listen(0, '127.0.0.1');
    await new Promise((resolve) => silent.once('listening', resolve));
    const { port } = silent.address() as { port: number };
    try {
      await expect(startTestSidecar(`http://127.0.0.1:${port}/graphql`, { timeoutMs: 300 })).rejects.toThrow(
        `upstream http://127.0.0.1:${port}/graphql did not answer within 300 ms`,
      );
    } finally {
      for (const socket of accepted) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});

describe('npm run sidecar', () => {
  it('takes HOST and PORT as the gateway does, says so once listening, and stops on SIGTERM', async () => {
    const process = spawnNode('dist/cli/sidecar.js', ['--upstream', `${gateway.url}/graphql`], { PORT: '0', HOST: '127.0.0.1' });
    const [, url] = (await process.waitFor(/REST sidecar listening on 127\.0\.0\.1 port \d+ \((http:\/\/127\.0\.0\.1:\d+)\)/, {
      stream: 'stderr',
    })) as unknown as [string, string];
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const [logLine] = await process.waitFor(/^\{.*"msg":"listening".*\}$/m);
    expect(JSON.parse(logLine)).toMatchObject({ msg: 'listening', host: '127.0.0.1', upstream: `${gateway.url}/graphql` });
    process.child.kill('SIGTERM');
    expect(await process.exited).toEqual({ code: 0, signal: null });
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  });

  it('reports a port in use in one line and never says it is listening', async () => {
    const taken = createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => taken.once('listening', resolve));
    const { port } = taken.address() as { port: number };
    try {
      const process = spawnNode('dist/cli/sidecar.js', [
        '--upstream',
        `${gateway.url}/graphql`,
        '--port',
        String(port),
        '--host',
        '127.0.0.1',
      ]);
      expect(await process.exited).toEqual({ code: 1, signal: null });
      expect(process.stderr()).toBe(`sidecar: port ${port} on 127.0.0.1 is already in use\n`);
      expect(process.stdout()).toBe('');
    } finally {
      taken.close();
    }
  });

  it('reports an upstream that refuses the connection as a refusal, in one line, at once', async () => {
    const closed = createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => closed.once('listening', resolve));
    const { port } = closed.address() as { port: number };
    await new Promise((resolve) => closed.close(resolve));
    const process = spawnNode('dist/cli/sidecar.js', ['--upstream', `http://127.0.0.1:${port}/graphql`, '--port', '0']);
    expect(await process.exited).toEqual({ code: 1, signal: null });
    expect(process.stderr()).toBe(
      `sidecar: upstream http://127.0.0.1:${port}/graphql refused the connection: nothing listens there (connect ECONNREFUSED 127.0.0.1:${port})\n`,
    );
  });

  it('refuses an upstream URL without /graphql in one line', async () => {
    const process = spawnNode('dist/cli/sidecar.js', ['--upstream', gateway.url, '--port', '0']);
    expect(await process.exited).toEqual({ code: 1, signal: null });
    expect(process.stderr()).toBe(
      `sidecar: upstream ${gateway.url}/ answered HTTP 404 without a GraphQL response: is /graphql missing from the URL?\n`,
    );
  });
});
