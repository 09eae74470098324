import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { json, postGraphql, type RawAnswer, send } from './http.js';

const GRAPHQL_RESPONSE = 'application/graphql-response+json; charset=utf-8';
const JSON_TYPE = 'application/json; charset=utf-8';
const PREFERS_GRAPHQL_RESPONSE = 'application/graphql-response+json, application/json;q=0.9';

let gateway: TestGateway;
let authorization: string;
/** Another caller, whose budget the rate-limit test leaves whole. */
let other: string;

beforeAll(async () => {
  // One request a second per caller: a short run of requests meets the limit.
  gateway = await startTestGateway({ RATE_LIMIT: '1' });
  await gateway.seed({
    users: [
      { id: 1, username: 'alice', quota: 1 },
      { id: 2, username: 'bob', quota: 1 },
    ],
  });
  authorization = `Bearer ${await gateway.token(1)}`;
  other = `Bearer ${await gateway.token(2)}`;
});

afterAll(() => gateway?.stop());

/** Posts `{ quota }` as the same caller until the rate limit answers (at most 50 requests). */
async function untilLimited(accept: string): Promise<RawAnswer> {
  for (let sent = 0; sent < 50; sent++) {
    const answer = await postGraphql(
      gateway.url,
      { query: '{ quota }' },
      { authorization, headers: { accept }, localAddress: '127.0.0.9' },
    );
    if (answer.status === 429) return answer;
  }
  throw new Error('the rate limit never answered');
}

describe('failures on /graphql outside Apollo Server', () => {
  const failures: [string, (accept: string) => Promise<RawAnswer>][] = [
    ['401 (no credentials)', (accept) => postGraphql(gateway.url, { query: '{ quota }' }, { headers: { accept } })],
    ['413 (body too large)', (accept) => postGraphql(gateway.url, 'x'.repeat(200 * 1024), { authorization, headers: { accept } })],
    [
      '415 (unreadable charset)',
      (accept) =>
        postGraphql(gateway.url, '{"query":"{ quota }"}', {
          authorization,
          headers: { accept, 'content-type': 'application/json; charset=klingon' },
        }),
    ],
    ['429 (rate limited)', untilLimited],
  ];

  for (const [name, fail] of failures) {
    it(`answers ${name} as application/graphql-response+json when the request prefers it`, async () => {
      const answer = await fail(PREFERS_GRAPHQL_RESPONSE);
      expect(answer.headers['content-type']).toBe(GRAPHQL_RESPONSE);
      expect(json(answer).errors[0].extensions.code).toEqual(expect.any(String));
    });
  }

  it('answers application/json when Accept is absent, ranks both equally, prefers JSON or accepts neither', async () => {
    for (const accept of ['', '*/*', 'application/json, application/graphql-response+json', 'application/json', 'text/plain']) {
      const answer = await postGraphql(gateway.url, { query: '{ quota }' }, { headers: accept === '' ? {} : { accept } });
      expect(answer.status, accept).toBe(401);
      expect(answer.headers['content-type'], accept).toBe(JSON_TYPE);
    }
  });

  it('negotiates as Apollo Server does for its own 400s', async () => {
    for (const accept of [PREFERS_GRAPHQL_RESPONSE, 'application/json, application/graphql-response+json']) {
      const apollos = await postGraphql(gateway.url, { query: '{ nope }' }, { authorization: other, headers: { accept } });
      const ours = await postGraphql(gateway.url, { query: '{ quota }' }, { headers: { accept } });
      expect([apollos.status, ours.status]).toEqual([400, 401]);
      expect(ours.headers['content-type']).toBe(apollos.headers['content-type']);
    }
  });
});

describe('the legacy REST endpoints', () => {
  it('answer application/json whatever Accept prefers', async () => {
    const answer = await send(gateway.url, { path: '/conversation/list', headers: { accept: PREFERS_GRAPHQL_RESPONSE } });
    expect(answer.status).toBe(401);
    expect(answer.headers['content-type']).toBe(JSON_TYPE);
    expect(json(answer)).toEqual({ status: false, message: 'unauthorized' });
  });
});
