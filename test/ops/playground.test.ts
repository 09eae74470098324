import { request as httpRequest } from 'node:http';

import { parse, validate } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { buildSchema } from '../../src/graphql/schema.js';
import { graphql, startTestGateway, type TestGateway } from '../support/gateway.js';

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';

interface PageSettings {
  tabs: { query: string; variables?: string; headers: string }[];
  headers: string;
}

async function openPlayground(gateway: Pick<TestGateway, 'url'>) {
  const response = await fetch(`${gateway.url}/graphql`, { headers: { accept: BROWSER_ACCEPT } });
  return { response, html: await response.text() };
}

function settingsOf(html: string): PageSettings {
  const json = /<script id="playground-settings" type="application\/json">(.*?)<\/script>/s.exec(html)?.[1];
  if (json === undefined) throw new Error('the page has no settings block');
  return JSON.parse(json) as PageSettings;
}

/** Every URL the page's markup loads (src and href attributes). */
function referencedUrls(html: string): string[] {
  return [...html.matchAll(/\s(?:src|href)="([^"]*)"/g)].map((match) => match[1]!);
}

describe('the playground outside production', () => {
  let gateway: TestGateway;
  let demo: TestGateway;

  beforeAll(async () => {
    gateway = await startTestGateway();
    // The embedded engine with its demo data, no JWT_SECRET: the service offers a demo token.
    demo = await startTestGateway({ JWT_SECRET: '', MONGODB_URI: '' });
  });
  afterAll(async () => {
    await gateway?.stop();
    await demo?.stop();
  });

  it('serves GraphiQL to a browser at GET /graphql, with no credentials', async () => {
    const { response, html } = await openPlayground(gateway);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(html).toContain('<div id="graphiql">');
  });

  it('loads every script and stylesheet from this server, and nothing from elsewhere', async () => {
    const { html } = await openPlayground(gateway);
    const urls = referencedUrls(html);
    expect(urls.filter((url) => url.endsWith('.js'))).toHaveLength(4);
    for (const url of urls) expect(url).toMatch(/^(\/playground\/assets\/[\w.-]+|data:,)$/);
    for (const url of urls.filter((url) => url.startsWith('/'))) {
      const asset = await fetch(`${gateway.url}${url}`);
      expect(asset.status, url).toBe(200);
      expect(asset.headers.get('content-type'), url).toMatch(url.endsWith('.css') ? /^text\/css/ : /^(text|application)\/javascript/);
      const body = await asset.text();
      if (url.endsWith('.css')) expect(body, url).not.toMatch(/url\((?!data:)|@import/);
    }
  });

  it('protects the page with a Content-Security-Policy that allows only this server', async () => {
    const policies = await Promise.all(
      [1, 2].map(async () => (await openPlayground(gateway)).response.headers.get('content-security-policy')!),
    );
    const directives = new Map(
      policies[0]!.split(';').map((directive) => {
        const [name, ...values] = directive.trim().split(/\s+/);
        return [name!, values] as const;
      }),
    );
    expect(directives.get('default-src')).toEqual(["'none'"]);
    expect(directives.get('script-src')).toEqual(["'self'"]);
    // The subscriptions' WebSocket: this server's host only.
    const host = new URL(gateway.url).host;
    expect(directives.get('connect-src')).toEqual(["'self'", `ws://${host}`, `wss://${host}`]);
    expect(directives.get('style-src')).toEqual(["'self'", expect.stringMatching(/^'nonce-[\w+/=]{20,}'$/)]);
    expect(directives.get('frame-ancestors')).toEqual(["'none'"]);
    expect(policies[0]).not.toMatch(/unsafe|https?:|\*/);
    // A Host header that is not a host names nothing in the policy.
    const forged = await new Promise<string>((resolve, reject) => {
      const request = httpRequest(
        `${gateway.url}/graphql`,
        { headers: { accept: BROWSER_ACCEPT, host: 'x; script-src *' } },
        (response) => {
          response.resume();
          resolve(String(response.headers['content-security-policy']));
        },
      );
      request.on('error', reject).end();
    });
    expect(forged).toMatch(/connect-src 'self';/);
    // A fresh nonce on every page.
    expect(policies[1]).not.toBe(policies[0]);
  });

  it('offers example operations that are valid against the schema', async () => {
    const { tabs } = settingsOf((await openPlayground(gateway)).html);
    const schema = buildSchema();
    const names = tabs.map(({ query }) => {
      const document = parse(query);
      expect(validate(schema, document), query).toEqual([]);
      return /(?:query|mutation|subscription) (\w+)/.exec(query)?.[1];
    });
    expect(names).toEqual([
      'Conversations',
      'Quota',
      'BalanceLive',
      'ConversationEvents',
      'Node',
      'DeleteConversation',
      'RenameConversation',
      'DeleteAllConversations',
      'Buy',
    ]);
    expect(tabs[0]!.query).toMatch(/messages\s*\{/);
  });

  it('pre-fills the tabs that take a global id with a demo conversation’s', async () => {
    const { tabs } = settingsOf((await openPlayground(demo)).html);
    const node = tabs.find(({ query }) => /query Node\b/.test(query))!;
    const { body } = await graphql(demo, node.query, {
      authorization: `Bearer ${demo.demoToken}`,
      variables: JSON.parse(node.variables!),
    });
    expect(body.data).toEqual({ node: { id: JSON.parse(node.variables!).id, number: 3, name: 'News digest' } });
    const mutations = tabs.filter(({ query }) => /mutation (Delete|Rename)Conversation\b/.test(query));
    expect(mutations.map(({ variables }) => JSON.parse(variables!).id)).toEqual([body.data.node.id, body.data.node.id]);
  });

  it('pre-fills the headers editor with the demo token the service printed', async () => {
    expect(demo.demoToken).toEqual(expect.any(String));
    const settings = settingsOf((await openPlayground(demo)).html);
    expect(JSON.parse(settings.headers)).toEqual({ Authorization: `Bearer ${demo.demoToken}` });
    for (const tab of settings.tabs) expect(JSON.parse(tab.headers)).toEqual({ Authorization: `Bearer ${demo.demoToken}` });
  });

  it('shows where a token goes when the service printed none', async () => {
    expect(gateway.demoToken).toBeUndefined();
    const html = (await openPlayground(gateway)).html;
    expect(JSON.parse(settingsOf(html).headers)).toEqual({ Authorization: 'Bearer <your token>' });
    // The placeholder cannot end the data block or open markup.
    expect(html).not.toContain('<your token>');
  });

  it('leaves GraphQL clients alone: a GET without Accept text/html still needs credentials', async () => {
    for (const accept of ['application/json', '*/*']) {
      const response = await fetch(`${gateway.url}/graphql?query=%7Bquota%7D`, { headers: { accept } });
      expect(response.status, accept).toBe(401);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    }
  });

  it('serves nothing but its own files under /playground/assets/', async () => {
    for (const path of [
      '/playground/assets/package.json',
      '/playground/assets/..%2F..%2Fpackage.json',
      '/playground/assets/graphiql.min.js.map',
    ]) {
      expect((await fetch(`${gateway.url}${path}`)).status, path).toBe(404);
    }
  });

  it('is turned off with PLAYGROUND=off', async () => {
    const off = await startTestGateway({ PLAYGROUND: 'off' });
    try {
      const { response } = await openPlayground(off);
      expect(response.status).toBe(401);
      expect((await fetch(`${off.url}/playground/assets/graphiql.min.js`)).status).toBe(404);
    } finally {
      await off.stop();
    }
  });
});

describe('the playground in production', () => {
  it('is off unless PLAYGROUND=on', async () => {
    const production = await startTestGateway({ NODE_ENV: 'production' });
    try {
      const { response } = await openPlayground(production);
      expect(response.status).toBe(401);
      expect(response.headers.get('content-type')).not.toMatch(/html/);
    } finally {
      await production.stop();
    }
  });

  it('with PLAYGROUND=on, is served without ever offering the demo token', async () => {
    const production = await startTestGateway({ NODE_ENV: 'production', PLAYGROUND: 'on', JWT_SECRET: '', MONGODB_URI: '' });
    try {
      expect(production.demoToken).toEqual(expect.any(String));
      const { response, html } = await openPlayground(production);
      expect(response.status).toBe(200);
      expect(html).not.toContain(production.demoToken);
      expect(JSON.parse(settingsOf(html).headers)).toEqual({ Authorization: 'Bearer <your token>' });
    } finally {
      await production.stop();
    }
  });
});
