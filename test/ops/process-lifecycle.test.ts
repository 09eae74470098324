import { execFile } from 'node:child_process';
import { request, type IncomingMessage } from 'node:http';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnNode, type NodeProcess } from '../support/node-process.js';

const run = promisify(execFile);
const curlAvailable = await run('curl', ['--version']).then(() => true, () => false);

/** `npm start` as a fresh clone runs it: no MONGODB_URI, no JWT_SECRET (the suite has already built dist/). */
describe('node dist/main.js with no MONGODB_URI', () => {
  let service: NodeProcess;
  let url: string;
  let token: string;

  beforeAll(async () => {
    service = spawnNode('dist/main.js', [], { PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' });
    [, url] = (await service.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/)) as unknown as [string, string];
    await service.waitFor(/Try:\n(?:.*\n)+?\n/);
    token = /^ {2}(ey[\w-]+\.[\w-]+\.[\w-]+)$/m.exec(service.stdout())?.[1] ?? '';
  });
  afterAll(async () => {
    if (service?.child.exitCode === null) {
      service.child.kill('SIGKILL');
      await service.exited;
    }
  });

  it('says it uses the embedded engine and prints a token for the demo user', () => {
    expect(service.stdout()).toMatch(/No MONGODB_URI: using the embedded MongoDB-compatible engine/);
    expect(service.stdout()).toMatch(/Access token for demo user 1/);
    expect(token).not.toBe('');
  });

  it.skipIf(!curlAvailable)('prints curl examples that work as printed', async () => {
    const examples = /Try:\n((?:.*\n)+?)\n/.exec(service.stdout())![1]!;
    expect(examples.match(/^\s*curl /gm)).toHaveLength(2);
    const { stdout } = await run('sh', ['-c', examples], { timeout: 10_000 });
    expect(stdout).toContain('{"status":true,"message":"","data":[{"id":3,"user_id":1,"name":"News digest"');
    expect(stdout).toMatch(/\{"data":\{"quota":100,"conversations":\{"nodes":\[\{"id":3,"name":"News digest"\},\{"id":2,/);
  });

  it('on SIGTERM stops accepting, finishes the request in flight, and exits 0', async () => {
    // A request whose body is still arriving when the signal comes.
    const inFlight = request(`${url}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    });
    const answered = new Promise<{ status: number; body: string }>((resolve, reject) => {
      inFlight.on('response', (response: IncomingMessage) => {
        let body = '';
        response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
        response.on('end', () => resolve({ status: response.statusCode!, body }));
      });
      inFlight.on('error', reject);
    });
    inFlight.write('{"query":"{ quota conversations(first: 1) ');
    inFlight.flushHeaders();
    await new Promise((resolve) => setTimeout(resolve, 200));

    service.child.kill('SIGTERM');
    await service.waitFor(/"msg":"stopping: finishing in-flight requests"/);
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
    expect(service.child.exitCode).toBeNull();

    const finishedAt = performance.now();
    inFlight.end('{ nodes { name } } }"}');
    expect(await answered).toEqual({ status: 200, body: '{"data":{"quota":100,"conversations":{"nodes":[{"name":"News digest"}]}}}\n' });
    expect(await service.exited).toEqual({ code: 0, signal: null });
    expect(performance.now() - finishedAt).toBeLessThan(3_000);
    expect(service.stdout()).toMatch(/"msg":"stopped"/);
  });
});
