import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { type IncomingMessage, request } from 'node:http';
import { type AddressInfo, createServer } from 'node:net';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { DRAIN_GRACE_MS } from '../../src/http/lifecycle.js';
import { startTestDatabase } from '../support/database.js';
import { TEST_JWT_SECRET } from '../support/gateway.js';
import { killIfRunning, type NodeProcess, runNode, spawnNode, startDemoGateway } from '../support/node-process.js';

const run = promisify(execFile);
const curlAvailable = await run('curl', ['--version']).then(
  () => true,
  () => false,
);

/** `npm start` as a fresh clone runs it: no MONGODB_URI, no JWT_SECRET (the suite has already built dist/). */
describe('node dist/main.js with no MONGODB_URI', () => {
  let service: NodeProcess;
  let url: string;
  let token: string;

  beforeAll(async () => {
    ({ service, url, token } = await startDemoGateway({ LOG_LEVEL: 'info' }));
    await service.waitFor(/"msg":"listening"/);
  });
  afterAll(() => killIfRunning(service));

  it('says on stdout, as a JSON log line, that it uses the embedded engine, with every subscription door, and no token', () => {
    const lines = service
      .stdout()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const listening = lines.find((line) => line.msg === 'listening');
    expect(listening).toMatchObject({ url, host: '127.0.0.1', database: 'embedded engine (in memory, in this process)', playground: true });
    expect(listening).toMatchObject({
      demoUser: 1,
      subscriptions: [expect.stringMatching(/^ws:/), expect.any(String), expect.any(String)],
    });
    // The demo token is on the banner (stderr), for the person who started it; a log line is read by whoever reads the logs.
    expect(token).not.toBe('');
    expect(service.stdout()).not.toContain(token);
    expect(service.stdout()).not.toMatch(/ey[\w-]+\.[\w-]+\.[\w-]+/);
  });

  it('names every subscription transport on its banner, and no wildcard address it is not bound to', () => {
    const banner = service.stderr();
    expect(banner).toContain(
      [
        `  subscriptions     ${url.replace(/^http/, 'ws')}/graphql (WebSocket, graphql-transport-ws)`,
        `                    ${url}/graphql/stream (Server-Sent Events, graphql-sse)`,
        `                    POST ${url}/graphql with Accept: multipart/mixed;subscriptionSpec="1.0" (multipart HTTP, as Apollo Client subscribes)`,
      ].join('\n'),
    );
    // HOST=127.0.0.1 here: the URL shown is all it listens on.
    expect(banner).not.toMatch(/bound to|0\.0\.0\.0/);
  });

  it('prints its banner on stderr, never among the JSON lines of stdout: what is served, the database, a token for the demo user', () => {
    const banner = service.stderr();
    expect(banner).toMatch(/GraphQL +http:\/\/127\.0\.0\.1:\d+\/graphql +\(playground/);
    expect(banner).toMatch(/database +embedded engine \(in memory, in this process\)/);
    // Every legacy endpoint served, from the route table itself (rename and clean included).
    expect(banner).toMatch(
      /REST +http:\/\/127\.0\.0\.1:\d+\/conversation\/list, \/conversation\/load, .*\/conversation\/rename, \/conversation\/clean/,
    );
    expect(banner).toMatch(/Access token for demo user 1/);
    expect(token).not.toBe('');
    for (const line of service.stdout().trim().split('\n')) expect(() => JSON.parse(line)).not.toThrow();
  });

  it.skipIf(!curlAvailable)('prints curl examples that work as printed', async () => {
    const examples = /Try:\n((?:.*\n)+?)\n/.exec(service.stderr())![1]!;
    expect(examples.match(/^\s*curl /gm)).toHaveLength(2);
    const { stdout } = await run('sh', ['-c', examples], { timeout: 10_000 });
    expect(stdout).toContain('{"status":true,"message":"","data":[{"id":3,"user_id":1,"name":"News digest"');
    expect(stdout).toMatch(
      /\{"data":\{"quota":100,"conversations":\{"nodes":\[\{"id":"[\w-]+","number":3,"name":"News digest"\},\{"id":"[\w-]+","number":2,/,
    );
  });

  it('on SIGTERM stops accepting, finishes the request in flight, and exits 0', async () => {
    // A request whose body is still arriving when the signal comes.
    // `Expect: 100-continue` makes the server say when it has read the headers: from then on the request is in flight.
    const inFlight = request(`${url}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', expect: '100-continue' },
    });
    const headersRead = new Promise<void>((resolve) => inFlight.once('continue', resolve));
    const answered = new Promise<{ status: number; body: string }>((resolve, reject) => {
      inFlight.on('response', (response: IncomingMessage) => {
        let body = '';
        response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
        response.on('end', () => resolve({ status: response.statusCode!, body }));
      });
      inFlight.on('error', reject);
    });
    inFlight.flushHeaders();
    await headersRead;
    inFlight.write('{"query":"{ quota conversations(first: 1) ');

    service.child.kill('SIGTERM');
    await service.waitFor(/"msg":"stopping/);
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
    expect(service.child.exitCode).toBeNull();

    const finishedAt = performance.now();
    inFlight.end('{ nodes { name } } }"}');
    expect(await answered).toEqual({ status: 200, body: '{"data":{"quota":100,"conversations":{"nodes":[{"name":"News digest"}]}}}\n' });
    expect(await service.exited).toEqual({ code: 0, signal: null });
    // Once the request is answered, not when the drain's grace would cut the connections it waits for
    // (timers never end early, so a process that waited for it could not pass).
    expect(performance.now() - finishedAt).toBeLessThan(DRAIN_GRACE_MS);
    expect(service.stdout()).toMatch(/"msg":"stopped"/);
  });
});

describe('node dist/main.js with MONGODB_URI', () => {
  it('refuses to start, in one line naming the database without its credentials, when the database does not answer', async () => {
    const closed = createServer().listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const { code, stdout, stderr } = await runNode('dist/main.js', [], {
      MONGODB_URI: `mongodb://admin:hunter2@127.0.0.1:${port}/chat?authSource=admin`,
      JWT_SECRET: TEST_JWT_SECRET,
      PORT: '0',
    });
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toMatch(
      new RegExp(
        `^chat-gateway: could not connect to the database at mongodb://127\\.0\\.0\\.1:${port}/chat: connect ECONNREFUSED[^\\n]*\\n$`,
      ),
    );
    expect(stderr).not.toContain('hunter2');
  });

  it('names the database and serves no playground in production, as its banner and log say', async () => {
    const database = await startTestDatabase();
    const service = spawnNode('dist/main.js', [], {
      MONGODB_URI: database.uri,
      JWT_SECRET: TEST_JWT_SECRET,
      NODE_ENV: 'production',
      PORT: '0',
      HOST: '127.0.0.1',
    });
    try {
      const [, url] = (await service.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/, { stream: 'stderr' })) as unknown as [
        string,
        string,
      ];
      const shown = database.uri.replace(/\?.*$/, '');
      expect(service.stderr()).toMatch(new RegExp(`database +${shown.replaceAll('.', '\\.')}\\n`));
      expect(service.stderr()).not.toMatch(/playground|token/i);
      const [logLine] = await service.waitFor(/^\{.*"msg":"listening".*\}$/m);
      expect(JSON.parse(logLine)).toMatchObject({ msg: 'listening', url, database: shown, playground: false });
      const page = await fetch(`${url}/graphql`, { headers: { accept: 'text/html' } });
      expect(page.headers.get('content-type')).not.toMatch(/text\/html/);
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
      await database.stop();
    }
  });
});
