import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { SsoStub } from '../../src/sso-stub/stub-server.js';
import { buy, startOfficialGateway, startStub, SUCCESS } from '../billing/official.js';
import { launchChromium, skipsBrowserTest } from '../support/browser.js';
import type { TestGateway } from '../support/gateway.js';

const SCREENSHOT = '/tmp/chat-gateway-playground.png';
const LIVE_SCREENSHOT = '/tmp/chat-gateway-playground-live-balance.png';

describe.skipIf(skipsBrowserTest('the playground browser test'))('the playground in a real browser', () => {
  let gateway: TestGateway;
  let browser: Browser;
  let stub: SsoStub;

  beforeAll(async () => {
    browser = await launchChromium();
    // The official deployment, so that the demo user can buy points; its wallet is at the stand-in provider.
    stub = await startStub({ demo: { wallet: 50 } });
    // The embedded engine with its demo data: the service makes a demo token, which the page pre-fills.
    gateway = await startOfficialGateway(stub, { JWT_SECRET: '', MONGODB_URI: '' });
    // The demo user's balance and newest conversation, set to values the page must show.
    await gateway.seed({
      users: [{ id: 1, username: 'demo', quota: 42.5 }],
      conversations: [
        {
          userId: 1,
          id: 4,
          name: 'Lisbon trip',
          model: 'gpt-4o',
          enableWeb: false,
          messages: [{ role: 'user', content: 'Three days in Lisbon?' }],
        },
      ],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await gateway?.stop();
    await stub?.close();
  });

  /** A new page on the playground, with what it requests, the sockets it opens and its errors recorded from the start. */
  async function openPlayground() {
    const page = await browser.newPage({ viewport: { width: 1400, height: 850 } });
    const requested: string[] = [];
    const sockets: string[] = [];
    const pageErrors: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    page.on('websocket', (socket) => sockets.push(socket.url()));
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.addInitScript({
      content: `window.cspViolations = [];
        document.addEventListener('securitypolicyviolation', (event) => window.cspViolations.push(event.violatedDirective + ' ' + event.blockedURI));`,
    });
    await page.goto(`${gateway.url}/graphql`);
    return { page, requested, sockets, pageErrors };
  }

  it('loads with no request leaving this server, and runs a query typed into the editor', async () => {
    const { page, requested, sockets, pageErrors } = await openPlayground();
    const queryEditor = page.locator('.graphiql-query-editor .CodeMirror');
    await queryEditor.waitFor();
    // The schema arrived (introspection with the pre-filled token): the docs explorer can list the root types.
    await page.getByRole('button', { name: 'Show Documentation Explorer' }).click();
    await page.getByText('query: Query').waitFor();

    await queryEditor.click();
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Delete');
    await page.keyboard.insertText('query Typed { quota conversations(first: 1) { nodes { name messages { content } } } }');
    // The tab takes the operation's name once GraphiQL has read the edit.
    await page.locator('.graphiql-tabs').getByText('Typed').waitFor();
    await page.keyboard.press('Control+Enter');
    const result = page.locator('.graphiql-response');
    await expect.poll(() => result.innerText(), { timeout: 10_000 }).toContain('Lisbon trip');
    expect(await result.innerText()).toContain('42.5');
    expect(await result.innerText()).toContain('Three days in Lisbon?');
    // The settings dialog adds a style element at run time; it must pass the policy too.
    await page.getByRole('button', { name: 'Open settings dialog' }).click();
    await page.getByText('Persist headers').waitFor();
    await page.keyboard.press('Escape');
    await page.screenshot({ path: SCREENSHOT });

    const origin = new URL(gateway.url).origin;
    expect(requested.filter((url) => !url.startsWith(`${origin}/`) && !url.startsWith('data:'))).toEqual([]);
    expect(requested).toContain(`${origin}/playground/assets/graphiql.min.js`);
    expect(requested.filter((url) => url === `${origin}/graphql`).length).toBeGreaterThanOrEqual(2);
    expect(await page.evaluate('window.cspViolations')).toEqual([]);
    // Queries go over HTTP; only subscriptions open a WebSocket.
    expect(sockets).toEqual([]);
    expect(pageErrors).toEqual([]);
  });

  it("runs the Balance (live) subscription over a WebSocket to this server and shows a purchase's new balance as it happens", async () => {
    const { page, sockets, pageErrors } = await openPlayground();
    await page.locator('.graphiql-tabs').getByText('BalanceLive').click();
    const queryEditor = page.locator('.graphiql-query-editor .CodeMirror');
    // GraphiQL reads the tab's operation name a moment after the switch, and keeps it in its storage.
    const storedOperationName = () =>
      page.evaluate("Object.keys(localStorage).filter((key) => key.endsWith(':operationName')).map((key) => localStorage.getItem(key))");
    await expect.poll(storedOperationName).toEqual(['BalanceLive']);
    await queryEditor.click();
    await page.keyboard.press('Control+Enter');
    const result = page.locator('.graphiql-response');
    await expect.poll(() => result.innerText(), { timeout: 10_000 }).toContain('"quota": 42.5');

    // Bought elsewhere (the legacy client, with the same demo token): 100 points for 10 of the wallet.
    expect(await buy(gateway, gateway.demoToken!, 100)).toEqual({ status: 200, text: SUCCESS });
    await expect.poll(() => result.innerText(), { timeout: 5_000 }).toContain('"quota": 142.5');
    await page.screenshot({ path: LIVE_SCREENSHOT });

    expect(sockets).toEqual([`${gateway.url.replace(/^http/, 'ws')}/graphql`]);
    expect(await page.evaluate('window.cspViolations')).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
