import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { legacyRoutes } from '../../src/rest/routes.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { json, postGraphql, type RawAnswer, send } from './http.js';

/**
 * Property-based fuzzing of every input an attacker controls: each REST endpoint's
 * method, query string, body and content type, and GraphQL variables and request
 * bodies, and paths. Whatever comes in: never a 5xx, always a JSON body, and the other
 * user's conversations and balance stay exactly as they were. About 1 400 requests.
 */
const RUNS_PER_ENDPOINT = 150;
const RUNS_OF_VARIABLES = 300;
const RUNS_OF_REQUEST_BODIES = 100;
const RUNS_OF_PATHS = 100;

const ALICE = 1;
const BOB = 2;
const conversationsOf = (userId: number) =>
  [1, 2, 3, 4, 5].map((id) => ({
    userId,
    id,
    name: `${userId === ALICE ? 'Alice' : 'Bob'} ${id}`,
    model: 'gpt-4o',
    enableWeb: id % 2 === 0,
    messages: [{ role: 'user', content: `secret ${userId}/${id}` }],
  }));

let gateway: TestGateway;
let authorization: string;
let bobBefore: unknown;
let requests = 0;

async function snapshotOf(userId: number) {
  const { conversations, users } = gateway.models;
  return {
    conversations: await conversations.find({ userId }, { _id: 0 }).sort({ id: 1 }).lean(),
    user: await users.findOne({ id: userId }, { _id: 0 }).lean(),
  };
}

beforeAll(async () => {
  gateway = await startTestGateway();
  await gateway.seed({
    users: [
      { id: ALICE, username: 'alice', quota: 12.5, apiKeys: ['sk-alice-0123456789abcdef'] },
      { id: BOB, username: 'bob', quota: 40, apiKeys: ['sk-bob-0123456789abcdef'] },
    ],
    conversations: [...conversationsOf(ALICE), ...conversationsOf(BOB)],
  });
  authorization = `Bearer ${await gateway.token(ALICE)}`;
  bobBefore = await snapshotOf(BOB);
});

afterAll(() => gateway?.stop());

/** The invariants every answer keeps, whatever was sent. */
function expectSound(answer: RawAnswer) {
  requests += 1;
  expect(answer.status, answer.text).toBeLessThan(500);
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  expect(() => json(answer), answer.text).not.toThrow();
}

// Inputs: the names and values a legacy client or an attacker would try, and anything at all.
const tricky = [
  '1',
  '2',
  '5',
  '0',
  '-1',
  '01',
  '1.0',
  '1e2',
  '0x1',
  ' 1',
  '2147483647',
  '2147483648',
  '9007199254740993',
  'NaN',
  'null',
  'true',
  '[]',
  '{}',
  '{"$gt":0}',
  '%',
  '%00',
  '\u0000',
  '../',
  '<script>',
];
const parameterName = fc.oneof(
  fc.constantFrom(
    'id',
    'id[]',
    'id[$gt]',
    'id[0]',
    'id[id]',
    'quota',
    'ID',
    '__proto__',
    'constructor[prototype][id]',
    'user_id',
    'userId',
  ),
  fc.string({ maxLength: 8 }),
);
const parameterValue = fc.oneof(
  fc.constantFrom(...tricky),
  fc.integer().map(String),
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 6 }),
);
const encodedQuery = fc
  .array(fc.tuple(parameterName, parameterValue), { maxLength: 4 })
  .map((pairs) => pairs.map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`).join('&'));
/** Raw query strings, sent as they are: stray `%`, brackets, repeated separators. */
const rawQuery = fc.string({ unit: fc.constantFrom(...'id=&[]%$gt0129.-+e,;:/?#\'"\\'.split('')), maxLength: 24 });
const queryString = fc.oneof(encodedQuery, rawQuery).map((query) => (query === '' ? '' : `?${query}`));

const jsonBody = fc.oneof(
  fc
    .record(
      { quota: fc.oneof(fc.integer(), fc.double(), fc.string(), fc.constant(null), fc.jsonValue({ maxDepth: 2 })) },
      { requiredKeys: [] },
    )
    .map((value) => JSON.stringify(value)),
  fc.json({ maxDepth: 3 }),
);
const body = fc.oneof(
  jsonBody,
  fc.string({ maxLength: 40 }),
  fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)),
);
const contentType = fc.constantFrom(
  undefined,
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=latin1',
  'application/json; charset=klingon',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data',
);
const method = (usual: string) =>
  fc.oneof({ weight: 4, arbitrary: fc.constant(usual) }, fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'));

describe('fuzzing the REST endpoints', () => {
  for (const route of legacyRoutes) {
    it(`keeps ${route.method} ${route.path} sound for any method, query string, body and content type`, async () => {
      await fc.assert(
        fc.asyncProperty(method(route.method), queryString, fc.option(body), contentType, async (verb, query, payload, type) => {
          const answer = await send(gateway.url, {
            method: verb,
            path: `${route.path}${query}`,
            headers: { authorization, ...(type === undefined ? {} : { 'content-type': type }) },
            ...(payload === null || verb === 'GET' ? {} : { body: payload }),
          });
          expectSound(answer);
        }),
        { numRuns: RUNS_PER_ENDPOINT },
      );
    });
  }
});

describe('fuzzing GraphQL', () => {
  const operations = [
    'query Page($first: Int, $after: String) { conversations(first: $first, after: $after) { nodes { id userId name messages { role content } } pageInfo { hasNextPage endCursor } totalCount } }',
    'query One($id: Int!) { conversation(number: $id) { id userId name messages { content } } }',
    'mutation Delete($id: Int!) { deleteConversationByNumber(number: $id) { ok error { code message } } }',
    'mutation Buy($quota: Int!) { buy(quota: $quota) { ok error { code message } quota } }',
    'query Gift { giftPackage { cert teenager } quota }',
  ];
  const variableValue = fc.oneof(
    fc.integer({ min: -5, max: 10 }),
    fc.integer(),
    fc.double(),
    fc.constantFrom(null, true, '', '1', 'MQ==', 'Mg', 'eyJpZCI6Mn0', '2147483648', [1], { $gt: 0 }, { id: 2 }),
    fc.string({ maxLength: 16 }),
    fc.jsonValue({ maxDepth: 2 }),
  );
  const variables = fc.oneof(
    {
      weight: 4,
      arbitrary: fc.dictionary(fc.constantFrom('first', 'after', 'id', 'quota', 'userId', '__proto__'), variableValue, { maxKeys: 4 }),
    },
    fc.jsonValue({ maxDepth: 2 }),
  );

  it('keeps /graphql sound for any variables of the schema’s operations', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...operations), variables, async (query, values) => {
        expectSound(await postGraphql(gateway.url, { query, variables: values }, { authorization }));
      }),
      { numRuns: RUNS_OF_VARIABLES },
    );
  });

  it('keeps /graphql sound for any request body', async () => {
    const requestBody = fc.oneof(
      fc
        .record(
          {
            query: fc.oneof(fc.constantFrom(...operations), fc.string({ maxLength: 40 }), fc.jsonValue({ maxDepth: 1 })),
            variables: variables,
            operationName: fc.oneof(fc.constantFrom('Page', 'One', 'Delete', 'Nope'), fc.jsonValue({ maxDepth: 1 })),
            extensions: fc.jsonValue({ maxDepth: 2 }),
          },
          { requiredKeys: [] },
        )
        .map((value) => JSON.stringify(value)),
      fc.json({ maxDepth: 3 }),
      fc.string({ maxLength: 40 }),
    );
    await fc.assert(
      fc.asyncProperty(requestBody, async (payload) => {
        expectSound(await postGraphql(gateway.url, payload, { authorization }));
      }),
      { numRuns: RUNS_OF_REQUEST_BODIES },
    );
  });
});

describe('fuzzing paths', () => {
  const segment = fc.oneof(
    fc.constantFrom(
      'conversation',
      'list',
      'load',
      'delete',
      'quota',
      'buy',
      'package',
      'graphql',
      'GRAPHQL',
      'openapi.json',
      'playground',
      'assets',
      '..',
      '.',
      '%2e%2e',
      '%2f',
      '%',
      '%zz',
      '%00',
      '',
    ),
    fc.string({ unit: fc.constantFrom(..."abcdeqrz0129.-_~%!$&'()*+,;=:@".split('')), maxLength: 10 }),
  );
  const path = fc.array(segment, { minLength: 1, maxLength: 4 }).map((segments) => `/${segments.join('/')}`);

  it('answers any path and method without a 5xx, and in JSON wherever it says JSON', async () => {
    await fc.assert(
      fc.asyncProperty(method('GET'), path, queryString, async (verb, target, query) => {
        const answer = await send(gateway.url, { method: verb, path: `${target}${query}`, headers: { authorization } });
        requests += 1;
        expect(answer.status, `${verb} ${target}${query}: ${answer.text}`).toBeLessThan(500);
        if (/json/.test(String(answer.headers['content-type']))) expect(() => json(answer)).not.toThrow();
      }),
      { numRuns: RUNS_OF_PATHS },
    );
  });
});

describe('after the fuzzing', () => {
  it('left the other user’s conversations and balance exactly as they were', async () => {
    expect(requests).toBe(legacyRoutes.length * RUNS_PER_ENDPOINT + RUNS_OF_VARIABLES + RUNS_OF_REQUEST_BODIES + RUNS_OF_PATHS);
    expect(await snapshotOf(BOB)).toEqual(bobBefore);
    const bob = await send(gateway.url, { path: '/conversation/list', headers: { authorization: 'sk-bob-0123456789abcdef' } });
    expect(json(bob).data).toHaveLength(5);
  });

  it('is still serving', async () => {
    expect((await send(gateway.url, { path: '/healthz' })).status).toBe(200);
    expect(json(await send(gateway.url, { path: '/quota', headers: { authorization } }))).toEqual({ status: true, quota: 12.5 });
  });
});
