import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { launchChromium, skipsBrowserTest } from '../support/browser.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';

const ALICE = 1;

/**
 * A web client's page on its own origin: a small API module in the manner of the legacy web
 * client's, calling the gateway with `fetch` and the `Authorization` header on every call.
 * A call the browser blocks answers `{ blocked }` with the error `fetch` threw.
 */
const CLIENT_PAGE = `<!doctype html>
<title>chat client</title>
<script>
  window.gatewayClient = (base, token) => ({
    async call(method, path, body) {
      try {
        const response = await fetch(base + path, {
          method,
          headers: { Authorization: token, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        return { status: response.status, requestId: response.headers.get('X-Request-Id'), body: await response.json() };
      } catch (error) {
        return { blocked: String(error) };
      }
    },
  });
</script>`;

interface Call {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
}
type Outcome = { status: number; requestId: string | null; body: any } | { blocked: string };

/** A second local server: the page's origin, another port than the gateway's. */
async function startPageServer(): Promise<{ origin: string; server: Server }> {
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(CLIENT_PAGE);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

function stopServer(server: Server | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (!server) return resolve();
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

describe.skipIf(skipsBrowserTest('the cross-origin browser test'))('a web client on another origin, in a real browser', () => {
  let gateway: TestGateway;
  let browser: Browser;
  let allowedPage: Awaited<ReturnType<typeof startPageServer>>;
  let refusedPage: Awaited<ReturnType<typeof startPageServer>>;
  let token: string;

  beforeAll(async () => {
    browser = await launchChromium();
    allowedPage = await startPageServer();
    refusedPage = await startPageServer();
    gateway = await startTestGateway({ CORS_ORIGINS: allowedPage.origin, REST_BASE_PATH: '/api' });
    await gateway.seed({
      users: [{ id: ALICE, username: 'alice', quota: 12.5 }],
      conversations: [1, 2, 3].map((id) => ({ userId: ALICE, id, name: `Chat ${id}`, model: 'gpt-4o', enableWeb: false, messages: [] })),
    });
    token = await gateway.token(ALICE);
  });

  afterAll(async () => {
    await browser?.close();
    await gateway?.stop();
    await stopServer(allowedPage?.server);
    await stopServer(refusedPage?.server);
  });

  async function openClient(origin: string): Promise<{ page: Page; console: string[] }> {
    const page = await browser.newPage();
    const console: string[] = [];
    page.on('console', (message) => console.push(message.text()));
    await page.goto(`${origin}/`);
    return { page, console };
  }

  /** Runs the calls one after another from the page, with the legacy client's bare token or a Bearer one. */
  function callFromPage(page: Page, calls: Call[], authorization: string): Promise<Outcome[]> {
    return page.evaluate(
      async ({ base, authorization, calls }) => {
        const client = (globalThis as any).gatewayClient(base, authorization);
        const outcomes = [];
        for (const { method, path, body } of calls) outcomes.push(await client.call(method, path, body));
        return outcomes;
      },
      { base: gateway.url, authorization, calls },
    );
  }

  async function storedNames(): Promise<string[]> {
    const response = await fetch(`${gateway.url}/conversation/list`, { headers: { authorization: token } });
    return ((await response.json()) as { data: { name: string }[] }).data.map((conversation) => conversation.name);
  }

  it('refuses the calls of a page whose origin is not listed, and the server changes nothing', async () => {
    const { page, console } = await openClient(refusedPage.origin);
    const outcomes = await callFromPage(
      page,
      [
        { method: 'GET', path: '/conversation/list' },
        { method: 'GET', path: '/api/conversation/list' },
        { method: 'POST', path: '/api/conversation/rename', body: { id: 2, name: 'Taken over' } },
        { method: 'GET', path: '/conversation/clean' },
        { method: 'POST', path: '/graphql', body: { query: 'mutation { deleteAllConversations { deletedCount } }' } },
      ],
      `Bearer ${token}`,
    );
    expect(outcomes).toEqual(Array(5).fill({ blocked: 'TypeError: Failed to fetch' }));
    // Blocked by CORS, at the preflight: not a network failure.
    expect(console.filter((text) => /has been blocked by CORS policy: Response to preflight request/.test(text))).toHaveLength(5);
    expect(await storedNames()).toEqual(['Chat 3', 'Chat 2', 'Chat 1']);
    await page.close();
  });

  it('lets a page whose origin is listed list, rename and clean, over REST (with and without the base path) and GraphQL', async () => {
    const { page } = await openClient(allowedPage.origin);
    const [list, listUnderBase, rename, graphql, clean, after] = await callFromPage(
      page,
      [
        { method: 'GET', path: '/conversation/list' },
        { method: 'GET', path: '/api/conversation/list' },
        { method: 'POST', path: '/api/conversation/rename', body: { id: 2, name: 'Renamed in the browser' } },
        { method: 'POST', path: '/graphql', body: { query: '{ conversations { nodes { number name } } }' } },
        { method: 'GET', path: '/conversation/clean' },
        { method: 'GET', path: '/api/conversation/list' },
      ],
      token,
    );
    expect(list).toMatchObject({ status: 200, body: { status: true, message: '', data: [{ id: 3 }, { id: 2 }, { id: 1 }] } });
    expect(listUnderBase).toEqual({ ...list, requestId: expect.any(String) });
    // An exposed header: the page can quote the request id in a report.
    expect(listUnderBase).toMatchObject({ requestId: expect.stringMatching(/^[\w-]{8,}$/) });
    expect(rename).toMatchObject({ status: 200, body: { status: true, message: '' } });
    expect(graphql).toMatchObject({
      status: 200,
      body: {
        data: {
          conversations: {
            nodes: [
              { number: 3, name: 'Chat 3' },
              { number: 2, name: 'Renamed in the browser' },
              { number: 1, name: 'Chat 1' },
            ],
          },
        },
      },
    });
    expect(clean).toMatchObject({ status: 200, body: { status: true, message: '' } });
    expect(after).toMatchObject({ status: 200, body: { status: true, message: '', data: [] } });
    expect(await storedNames()).toEqual([]);
    await page.close();
  });
});
