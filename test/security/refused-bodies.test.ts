import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { BODY_LIMIT_BYTES } from '../../src/limits.js';
import { eventually } from '../support/eventually.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { sample, scrapeMetrics } from '../support/metrics.js';
import { openConnection, rawRequest } from '../support/raw-http.js';
import { startTestSidecar, type TestSidecar } from '../support/sidecar.js';

let gateway: TestGateway;
let sidecar: TestSidecar;
let authorization: string;

beforeAll(async () => {
  gateway = await startTestGateway();
  await gateway.seed({ users: [{ id: 1, username: 'alice', quota: 12.5 }] });
  authorization = `Bearer ${await gateway.token(1)}`;
  sidecar = await startTestSidecar(`${gateway.url}/graphql`);
});
afterAll(async () => {
  await sidecar?.stop();
  await gateway?.stop();
});

const FIVE_MB = 5 * 1024 * 1024;
const TIMES = 10;

/** Posts a body of `bytes` bytes with Node's global fetch, `times` times in a row; prints each outcome as a JSON line. */
const FETCH_CLIENT = `
const [url, headers, bytes, times] = JSON.parse(process.argv[1]);
const body = 'x'.repeat(bytes);
for (let attempt = 0; attempt < times; attempt++) {
  try {
    const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    console.log(JSON.stringify({ status: response.status, body: await response.json() }));
  } catch (error) {
    console.log(JSON.stringify({ error: String(error.cause?.code ?? error.cause ?? error) }));
  }
}`;

/**
 * What Node's fetch makes of `times` POSTs of `bytes` bytes to `url`, run in a process of its
 * own as a client on another host would be: inside the server's process, the client would only
 * run between the server's steps, and never be caught writing when the server closes.
 */
async function fetchInItsOwnProcess(url: string, headers: Record<string, string>, bytes = FIVE_MB, times = TIMES): Promise<unknown[]> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--input-type=module', '--eval', FETCH_CLIENT, JSON.stringify([url, headers, bytes, times])],
    { timeout: 60_000 },
  );
  return stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as unknown);
}

const tooLarge = {
  legacy: { status: 413, body: { status: false, error: 'request body too large' } },
  graphql: {
    status: 413,
    body: {
      errors: [{ message: `request body is larger than the limit of ${BODY_LIMIT_BYTES} bytes`, extensions: { code: 'BAD_REQUEST' } }],
    },
  },
};
const unauthorized = {
  legacy: { status: 401, body: { status: false, error: 'unauthorized' } },
  graphql: { status: 401, body: { errors: [{ message: 'missing or invalid credentials', extensions: { code: 'UNAUTHENTICATED' } }] } },
};

describe('a body refused before it is read, posted with Node’s fetch ten times in a row', () => {
  const cases: [string, () => string, () => Record<string, string>, unknown][] = [
    ['5 MB to the gateway’s /buy is answered 413', () => `${gateway.url}/buy`, () => ({ authorization }), tooLarge.legacy],
    ['5 MB to the gateway’s /graphql is answered 413', () => `${gateway.url}/graphql`, () => ({ authorization }), tooLarge.graphql],
    ['5 MB to the sidecar’s /buy is answered 413', () => `${sidecar.url}/buy`, () => ({ authorization }), tooLarge.legacy],
    [
      'with a junk token to the gateway’s /buy is answered 401',
      () => `${gateway.url}/buy`,
      () => ({ authorization: 'Bearer junk' }),
      unauthorized.legacy,
    ],
    [
      'with a junk token to the gateway’s /graphql is answered 401',
      () => `${gateway.url}/graphql`,
      () => ({ authorization: 'Bearer junk' }),
      unauthorized.graphql,
    ],
    [
      'with a junk token to the sidecar’s /buy is answered 401',
      () => `${sidecar.url}/buy`,
      () => ({ authorization: 'Bearer junk' }),
      unauthorized.legacy,
    ],
  ];
  for (const [name, url, headers, expected] of cases) {
    it(`${name}, and fetch reads the status and body each time`, async () => {
      // Before, the connection was reset under the client, which saw EPIPE in about two tries of three.
      expect(await fetchInItsOwnProcess(url(), headers())).toEqual(Array.from({ length: TIMES }, () => expected));
    }, 60_000);
  }
});

describe('the metrics of a refused body (and the request log, which shares their outcome)', () => {
  it('count its answer’s status, though the client closes the connection before the server ends it', async () => {
    const labels = (status: string) => ({ method: 'POST', route: '/buy', status });
    const before = await scrapeMetrics(gateway.url);
    const outcomes = await fetchInItsOwnProcess(`${gateway.url}/buy`, { authorization }, FIVE_MB, 3);
    expect(outcomes).toEqual(Array.from({ length: 3 }, () => tooLarge.legacy));
    // The server ends each exchange once the client has gone, a moment after fetch has its answer.
    const counted = (text: string) =>
      sample(text, 'http_requests_total', labels('413')) - sample(before, 'http_requests_total', labels('413'));
    await eventually(async () => (counted(await scrapeMetrics(gateway.url)) === 3 ? true : undefined), 5_000, 'three 413s counted');
    expect(sample(await scrapeMetrics(gateway.url), 'http_requests_total', labels('499'))).toBe(0);
  });
});

describe('a failure answered before a request is complete, on a keep-alive connection', () => {
  const servers = { gateway: () => gateway.url, sidecar: () => sidecar.url };
  /** Requests with nothing unread (no Content-Length, no Transfer-Encoding, or a length of 0), refused at once. */
  const bodiless: [string, string, [string, string][], number][] = [
    ['GET', '/nowhere', [], 404],
    ['GET', '/quota', [], 401],
    ['DELETE', '/quota', [], 405],
    ['POST', '/nowhere', [['Content-Length', '0']], 404],
  ];

  it.each(Object.keys(servers) as (keyof typeof servers)[])(
    'keeps the connection of a request without a body, on the %s: the next request is answered on it',
    async (server) => {
      const url = servers[server]();
      const host: [string, string] = ['Host', new URL(url).host];
      const connection = await openConnection(url);
      try {
        for (const [method, path, headers, status] of bodiless) {
          const [refused] = await connection.exchange([rawRequest(method, path, [host, ...headers])], 1, 5_000);
          expect([method, path, refused?.status, refused?.headers.connection]).toEqual([method, path, status, 'keep-alive']);
        }
        const [answered] = await connection.exchange([rawRequest('GET', '/quota', [host, ['Authorization', authorization]])], 1, 5_000);
        expect(answered).toMatchObject({ status: 200, body: '{"status":true,"quota":12.5}' });
      } finally {
        connection.close();
      }
    },
  );

  it.each(Object.keys(servers) as (keyof typeof servers)[])(
    'closes the connection of a request whose body is left unread, on the %s, once it is answered',
    async (server) => {
      const url = servers[server]();
      const host: [string, string] = ['Host', new URL(url).host];
      const connection = await openConnection(url);
      try {
        const declared = rawRequest('POST', '/buy', [host, ['Authorization', 'Bearer junk'], ['Content-Length', '1000']]);
        const [refused] = await connection.exchange([declared], 1, 5_000);
        expect([refused?.status, refused?.headers.connection]).toEqual([401, 'close']);
        // Nothing more is read on it: the server closes it (once the body's wait is over).
        expect(await connection.exchange([], 1, 5_000)).toEqual([]);
      } finally {
        connection.close();
      }
    },
  );
});
