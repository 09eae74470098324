import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { killIfRunning, type NodeProcess, startDemoGateway } from '../support/node-process.js';

/** What `fast-objects-probe.mjs` wrote for each finished response. */
interface Seen {
  method: string;
  url: string;
  request: boolean;
  response: boolean;
}

/**
 * V8 turns an object into a dictionary when its shape cannot be shared: an accessor defined per
 * request (its own getter closure), or a class whose objects keep most of their fields outside
 * themselves when symbol-keyed stores add more. Every property read of such a request or response
 * (by Express, Node's HTTP code and the gateway's steps) is then a hash lookup, and each one holds
 * kilobytes more while it streams. The built service runs here as in production, with Node's
 * diagnostics channel reporting each response as it finishes.
 */
describe('requests and responses of node dist/main.js', () => {
  let service: NodeProcess;
  let url: string;
  let token: string;

  beforeAll(async () => {
    ({ service, url, token } = await startDemoGateway(
      { LOG_LEVEL: 'warn' },
      { nodeFlags: ['--allow-natives-syntax', '--import', './test/support/fast-objects-probe.mjs'] },
    ));
  });
  afterAll(() => killIfRunning(service));

  it('stay fast objects to the end of every answer, request after request, on REST, /graphql and failures', async () => {
    const authorization = `Bearer ${token}`;
    const requests = [
      () => fetch(`${url}/conversation/list`, { headers: { authorization } }),
      () => fetch(`${url}/quota`, { headers: { authorization } }),
      () =>
        fetch(`${url}/graphql`, {
          method: 'POST',
          headers: { authorization, 'content-type': 'application/json' },
          body: JSON.stringify({ query: '{ quota conversations(first: 2) { nodes { id name } } }' }),
        }),
      () => fetch(`${url}/no-such-path`),
      () => fetch(`${url}/conversation/list`),
    ];
    for (let round = 0; round < 3; round++) {
      for (const request of requests) expect((await request()).status).toBeLessThan(500);
    }
    const seen = (): Seen[] =>
      service
        .stderr()
        .split('\n')
        .filter((line) => line.startsWith('fast-objects '))
        .map((line) => JSON.parse(line.slice('fast-objects '.length)) as Seen);
    await expect.poll(() => seen().length).toBeGreaterThanOrEqual(3 * requests.length);
    expect(seen().filter((answer) => !answer.request || !answer.response)).toEqual([]);
  });
});
