import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ConfigError, loadConfig } from '../../src/config.js';
import { legacyRoutes } from '../../src/rest/routes.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { startTestSidecar } from '../support/sidecar.js';
import { json, type RawAnswer, send } from './http.js';

const ALLOWED = 'https://chat.example.com';
const ALSO_ALLOWED = 'http://localhost:5173';
const REFUSED = 'https://evil.example.net';
const ALICE = 1;

/** Every header of the CORS protocol an answer may carry. */
const CORS_HEADERS = [
  'access-control-allow-origin',
  'access-control-allow-methods',
  'access-control-allow-headers',
  'access-control-allow-credentials',
  'access-control-expose-headers',
  'access-control-max-age',
];

function corsHeadersOf(answer: RawAnswer): Record<string, unknown> {
  return Object.fromEntries(CORS_HEADERS.filter((name) => answer.headers[name] !== undefined).map((name) => [name, answer.headers[name]]));
}

function preflight(url: string, path: string, origin: string | undefined, method = 'GET'): Promise<RawAnswer> {
  return send(url, {
    method: 'OPTIONS',
    path,
    headers: {
      ...(origin === undefined ? {} : { origin }),
      'access-control-request-method': method,
      'access-control-request-headers': 'authorization,content-type',
    },
  });
}

describe('CORS_ORIGINS and REST_BASE_PATH configuration', () => {
  it('takes a comma-separated list of origins', () => {
    expect(loadConfig({ CORS_ORIGINS: ` ${ALLOWED} , ${ALSO_ALLOWED},${ALLOWED}` }).corsOrigins).toEqual([ALLOWED, ALSO_ALLOWED]);
    expect(loadConfig({}).corsOrigins).toEqual([]);
    expect(loadConfig({ CORS_ORIGINS: '' }).corsOrigins).toEqual([]);
  });

  const notOrigins: [string, RegExp][] = [
    ['*', /"\*": wildcards are not allowed/],
    ['https://chat.example.com/', /did you mean https:\/\/chat\.example\.com\?/],
    ['https://chat.example.com/app', /did you mean https:\/\/chat\.example\.com\?/],
    ['https://Chat.Example.com', /did you mean https:\/\/chat\.example\.com\?/],
    ['https://chat.example.com:443', /did you mean https:\/\/chat\.example\.com\?/],
    ['chat.example.com', /"chat\.example\.com" is not an origin/],
    ['null', /"null" is not an origin/],
    ['ftp://files.example.com', /"ftp:\/\/files\.example\.com" is not an origin/],
    ['https://*.example.com', /wildcards are not allowed/],
  ];
  for (const [value, message] of notOrigins) {
    it(`refuses CORS_ORIGINS=${value} with a clear message`, () => {
      expect(() => loadConfig({ CORS_ORIGINS: `${ALLOWED},${value}` })).toThrow(ConfigError);
      expect(() => loadConfig({ CORS_ORIGINS: `${ALLOWED},${value}` })).toThrow(message);
      expect(() => loadConfig({ CORS_ORIGINS: value })).toThrow(/^Invalid configuration:\n {2}- CORS_ORIGINS /);
    });
  }

  it('takes a base path of one or more segments', () => {
    expect(loadConfig({ REST_BASE_PATH: '/api' }).restBasePath).toBe('/api');
    expect(loadConfig({ REST_BASE_PATH: '/v1/chat-api' }).restBasePath).toBe('/v1/chat-api');
    expect(loadConfig({}).restBasePath).toBeUndefined();
  });

  const badBasePaths = [
    'api',
    '/api/',
    '/',
    '//api',
    '/..',
    '/api/./v1',
    '/api?x=1',
    '/a b',
    '/api/*',
    '/graphql',
    '/graphql/rest',
    '/GraphQL',
    '/healthz',
    '/metrics/x',
    '/openapi.json',
    '/playground',
  ];
  for (const value of badBasePaths) {
    it(`refuses REST_BASE_PATH=${value}`, () => {
      expect(() => loadConfig({ REST_BASE_PATH: value })).toThrow(/REST_BASE_PATH must/);
    });
  }

  it('refuses a base path under any legacy endpoint’s first segment', () => {
    for (const { path } of legacyRoutes) {
      expect(() => loadConfig({ REST_BASE_PATH: `/${path.split('/')[1]}` }), path).toThrow(
        /REST_BASE_PATH must not start with a path the service serves/,
      );
    }
  });
});

describe('CORS with an allow-list', () => {
  let gateway: TestGateway;
  let token: string;

  beforeAll(async () => {
    gateway = await startTestGateway({ CORS_ORIGINS: `${ALLOWED},${ALSO_ALLOWED}`, REST_BASE_PATH: '/api' });
    await gateway.seed({
      users: [{ id: ALICE, username: 'alice', quota: 12.5 }],
      conversations: [{ userId: ALICE, id: 1, name: 'Trip plan', model: 'gpt-4o', messages: [] }],
    });
    token = await gateway.token(ALICE);
  });

  afterAll(() => gateway?.stop());

  describe('preflights', () => {
    const paths: [string, string][] = [
      ['/conversation/list', 'GET'],
      ['/api/conversation/list', 'GET'],
      ['/conversation/rename', 'POST'],
      ['/api/conversation/clean', 'GET'],
      ['/graphql', 'POST'],
    ];
    for (const [path, method] of paths) {
      it(`answers a preflight for ${method} ${path} from an allowed origin with 204 and the permissions, reading nothing`, async () => {
        const commands = await gateway.commandsDuring(async () => {
          const answer = await preflight(gateway.url, path, ALSO_ALLOWED, method);
          expect(answer.status).toBe(204);
          expect(answer.text).toBe('');
          expect(corsHeadersOf(answer)).toEqual({
            'access-control-allow-origin': ALSO_ALLOWED,
            'access-control-allow-methods': 'GET,POST',
            'access-control-allow-headers':
              'Authorization,Content-Type,Apollo-Require-Preflight,X-Apollo-Operation-Name,Apollographql-Client-Name,Apollographql-Client-Version,X-Request-Id,Idempotency-Key',
            'access-control-expose-headers': 'Retry-After,WWW-Authenticate,Allow,X-Request-Id',
            'access-control-max-age': '600',
          });
          expect(answer.headers.vary).toMatch(/\bOrigin\b/);
        });
        expect(commands).toEqual([]);
      });
    }

    it('treats OPTIONS from any other origin, or none, as a method the path does not serve: 405 with Allow and no CORS header', async () => {
      for (const origin of [REFUSED, 'null', `${ALLOWED}.evil.example.net`, undefined]) {
        const list = await preflight(gateway.url, '/conversation/list', origin);
        expect({ status: list.status, allow: list.headers.allow, body: json(list) }).toEqual({
          status: 405,
          allow: 'GET',
          body: { status: false, message: 'method not allowed; use GET' },
        });
        expect(corsHeadersOf(list)).toEqual({});
        const rename = await preflight(gateway.url, '/api/conversation/rename', origin, 'POST');
        expect({ status: rename.status, allow: rename.headers.allow }).toEqual({ status: 405, allow: 'POST' });
        expect(corsHeadersOf(rename)).toEqual({});
        const quota = await preflight(gateway.url, '/quota', origin);
        expect({ status: quota.status, body: json(quota) }).toEqual({
          status: 405,
          body: { status: false, error: 'method not allowed; use GET' },
        });
        const graphql = await preflight(gateway.url, '/graphql', origin, 'POST');
        expect({ status: graphql.status, allow: graphql.headers.allow }).toEqual({ status: 405, allow: 'GET, POST' });
        expect(json(graphql).errors[0].extensions.code).toBe('METHOD_NOT_ALLOWED');
        expect(corsHeadersOf(graphql)).toEqual({});
        const unknown = await preflight(gateway.url, '/nowhere', origin);
        expect(unknown.status).toBe(404);
        expect(corsHeadersOf(unknown)).toEqual({});
      }
    });
  });

  describe('answers', () => {
    it('name an allowed origin, vary by Origin and never allow credentials', async () => {
      const answer = await send(gateway.url, { path: '/conversation/list', headers: { origin: ALLOWED, authorization: token } });
      expect(answer.status).toBe(200);
      expect(corsHeadersOf(answer)).toEqual({
        'access-control-allow-origin': ALLOWED,
        'access-control-expose-headers': 'Retry-After,WWW-Authenticate,Allow,X-Request-Id',
      });
      expect(answer.headers.vary).toMatch(/\bOrigin\b/);
    });

    it('carry no CORS header for another origin, but still vary by Origin', async () => {
      for (const path of ['/conversation/list', '/api/quota', '/graphql?query=%7Bquota%7D']) {
        const answer = await send(gateway.url, { path, headers: { origin: REFUSED, authorization: token } });
        expect(answer.status).toBe(200);
        expect(corsHeadersOf(answer)).toEqual({});
        expect(answer.headers.vary).toMatch(/\bOrigin\b/);
      }
    });

    it('name an allowed origin on failures too, so the page can read a 401, 404 or 405', async () => {
      const unauthorized = await send(gateway.url, { path: '/api/conversation/list', headers: { origin: ALLOWED } });
      const missing = await send(gateway.url, { path: '/api/nowhere', headers: { origin: ALLOWED, authorization: token } });
      const wrongMethod = await send(gateway.url, { method: 'POST', path: '/conversation/list', headers: { origin: ALLOWED } });
      const graphqlUnauthorized = await send(gateway.url, { method: 'POST', path: '/graphql', headers: { origin: ALLOWED } });
      expect([unauthorized, missing, wrongMethod, graphqlUnauthorized].map((answer) => answer.status)).toEqual([401, 404, 405, 401]);
      for (const answer of [unauthorized, missing, wrongMethod, graphqlUnauthorized]) {
        expect(answer.headers['access-control-allow-origin']).toBe(ALLOWED);
      }
    });

    it('leave the probes alone', async () => {
      const answer = await send(gateway.url, { path: '/healthz', headers: { origin: ALLOWED } });
      expect(answer.status).toBe(200);
      expect(corsHeadersOf(answer)).toEqual({});
    });
  });

  it('is applied alike by the REST sidecar', async () => {
    const sidecar = await startTestSidecar(`${gateway.url}/graphql`, { corsOrigins: [ALLOWED], basePath: '/api' });
    try {
      const allowed = await preflight(sidecar.url, '/api/conversation/rename', ALLOWED, 'POST');
      expect({ status: allowed.status, origin: allowed.headers['access-control-allow-origin'] }).toEqual({ status: 204, origin: ALLOWED });
      const refused = await preflight(sidecar.url, '/api/conversation/rename', REFUSED, 'POST');
      expect({ status: refused.status, cors: corsHeadersOf(refused) }).toEqual({ status: 405, cors: {} });
      const answer = await send(sidecar.url, { path: '/api/quota', headers: { origin: ALLOWED, authorization: token } });
      expect({ status: answer.status, origin: answer.headers['access-control-allow-origin'] }).toEqual({ status: 200, origin: ALLOWED });
      // One HTTP app for both, in one order: /metrics comes after CORS in the sidecar as in the gateway, the probes before it.
      for (const path of ['/metrics', '/healthz']) {
        const here = await send(sidecar.url, { path, headers: { origin: ALLOWED } });
        const there = await send(gateway.url, { path, headers: { origin: ALLOWED } });
        expect({ path, status: here.status, cors: corsHeadersOf(here) }).toEqual({
          path,
          status: there.status,
          cors: corsHeadersOf(there),
        });
      }
      const scrape = await send(sidecar.url, { path: '/metrics', headers: { origin: ALLOWED } });
      expect({ status: scrape.status, origin: scrape.headers['access-control-allow-origin'] }).toEqual({ status: 200, origin: ALLOWED });
    } finally {
      await sidecar.stop();
    }
  });

  describe('CSRF protection stays', () => {
    it('refuses a simple (unpreflighted) POST that would run a mutation, even from an allowed origin, and changes nothing', async () => {
      const answer = await send(gateway.url, {
        method: 'POST',
        path: '/graphql',
        headers: { origin: ALLOWED, authorization: `Bearer ${token}`, 'content-type': 'text/plain' },
        body: JSON.stringify({ query: 'mutation { deleteAllConversations { deletedCount } }' }),
      });
      expect(answer.status).toBe(400);
      expect(answer.text).toMatch(/Cross-Site Request Forgery/);
      const list = await send(gateway.url, { path: '/conversation/list', headers: { authorization: token } });
      expect(json(list).data).toHaveLength(1);
    });
  });
});

describe('CORS and the rate limits', () => {
  let gateway: TestGateway;

  beforeAll(async () => {
    gateway = await startTestGateway({ CORS_ORIGINS: ALLOWED, RATE_LIMIT: '1' });
  });

  afterAll(() => gateway?.stop());

  it('answers preflights before the per-address limit: far more than one address may send are all 204', async () => {
    // One address may send 10 a second plus a burst of 20 (RATE_LIMIT=1).
    const answers = await Promise.all(Array.from({ length: 60 }, () => preflight(gateway.url, '/quota', ALLOWED)));
    expect(answers.map((answer) => answer.status)).toEqual(Array(60).fill(204));
  });

  it('names an allowed origin on a 429, so the page can read Retry-After and wait', async () => {
    const token = await gateway.token(ALICE);
    const answers = await Promise.all(
      Array.from({ length: 40 }, () => send(gateway.url, { path: '/quota', headers: { origin: ALLOWED, authorization: token } })),
    );
    const refused = answers.filter((answer) => answer.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    for (const answer of refused) {
      expect(answer.headers['access-control-allow-origin']).toBe(ALLOWED);
      expect(answer.headers['retry-after']).toMatch(/^[1-9][0-9]*$/);
    }
  });
});

describe('CORS without CORS_ORIGINS', () => {
  let gateway: TestGateway;

  beforeAll(async () => {
    gateway = await startTestGateway();
  });

  afterAll(() => gateway?.stop());

  it('answers no preflight and adds no CORS header, nor Vary: Origin', async () => {
    const answer = await preflight(gateway.url, '/conversation/list', ALLOWED);
    expect(answer.status).toBe(405);
    expect(corsHeadersOf(answer)).toEqual({});
    const actual = await send(gateway.url, { path: '/conversation/list', headers: { origin: ALLOWED } });
    expect(actual.status).toBe(401);
    expect(corsHeadersOf(actual)).toEqual({});
    expect(actual.headers.vary ?? '').not.toMatch(/\bOrigin\b/);
  });
});
