import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { json, postGraphql, type RawAnswer, send } from './http.js';

const ALICE = 1;
/** A stored conversation without a name: the schema promises one, so reading it is an internal error. */
const BROKEN = 77;

/** Text that must never reach a client in production: stack frames, file paths, driver and engine names. */
const INTERNALS = /stacktrace|\bat \w|\.ts:\d|\.js:\d|node_modules|mongo|mongoose|Cannot return null|non-nullable|Conversation\.name/i;

async function startWithBrokenConversation(environment: Record<string, string>) {
  const gateway = await startTestGateway(environment);
  await gateway.seed({
    users: [{ id: ALICE, username: 'alice', quota: 12.5 }],
    conversations: [{ userId: ALICE, id: 1, name: 'Trip plan', model: 'gpt-4o', messages: [] }],
  });
  await gateway.models.conversations.collection.insertOne({ userId: ALICE, id: BROKEN, model: 'gpt-4o', enableWeb: false, messages: [] });
  return gateway;
}

let production: TestGateway;
let development: TestGateway;
let authorization: string;

beforeAll(async () => {
  [production, development] = await Promise.all([startWithBrokenConversation({ NODE_ENV: 'production' }), startWithBrokenConversation({})]);
  authorization = `Bearer ${await production.token(ALICE)}`;
});

afterAll(async () => {
  await Promise.all([production?.stop(), development?.stop()]);
});

const readBroken = `{ conversation(number: ${BROKEN}) { id name } }`;

describe('an internal error in production', () => {
  it('answers only its code, path and the request id of the log line on /graphql', async () => {
    const answer = await postGraphql(production.url, { query: readBroken }, { authorization });
    expect(answer.status).toBe(200);
    const requestId = answer.headers['x-request-id'];
    expect(requestId).toMatch(/^[\w-]{8,}$/);
    expect(json(answer)).toEqual({
      data: { conversation: null },
      errors: [
        { message: 'internal server error', path: ['conversation', 'name'], extensions: { code: 'INTERNAL_SERVER_ERROR', requestId } },
      ],
    });
  });

  it('carries the caller’s own X-Request-Id, when it sends one', async () => {
    const answer = await postGraphql(production.url, { query: readBroken }, { authorization, headers: { 'x-request-id': 'client-42' } });
    expect(json(answer).errors[0].extensions.requestId).toBe('client-42');
  });

  it('answers the REST layer’s 500 with the request id and no internals', async () => {
    const answer = await send(production.url, { path: `/conversation/load?id=${BROKEN}`, headers: { authorization } });
    expect(answer.status).toBe(500);
    expect(answer.text).toBe(`{"status":false,"message":"internal error","request_id":"${answer.headers['x-request-id']}"}`);
  });

  it('shows its message and stack outside production, which is what production hides', async () => {
    const answer = await postGraphql(development.url, { query: readBroken }, { authorization });
    const error = json(answer).errors[0];
    expect(error.message).toMatch(/Cannot return null for non-nullable field Conversation\.name/);
    expect(error.extensions.stacktrace.length).toBeGreaterThan(0);
    expect(error.extensions.requestId).toBe(answer.headers['x-request-id']);
  });
});

describe('outside production', () => {
  it('carries no stack on a client’s own mistake: a syntax error, an unknown field, a bad argument, missing credentials', async () => {
    const mistakes = await Promise.all([
      postGraphql(development.url, { query: '{ quota' }, { authorization }),
      postGraphql(development.url, { query: '{ quot }' }, { authorization }),
      postGraphql(development.url, { query: '{ conversation(number: "one") { id } }' }, { authorization }),
      postGraphql(development.url, { query: '{ quota }' }),
    ]);
    expect(mistakes.map((answer) => json(answer).errors[0].extensions.code)).toEqual([
      'GRAPHQL_PARSE_FAILED',
      'GRAPHQL_VALIDATION_FAILED',
      'GRAPHQL_VALIDATION_FAILED',
      'UNAUTHENTICATED',
    ]);
    expect(json(mistakes[0]!).errors[0].message).toMatch(/^Syntax Error: Expected Name, found <EOF>\.$/);
    for (const answer of mistakes) expect(answer.text).not.toMatch(/stacktrace|\bat \w|\.ts:\d|\.js:\d/);
  });
});

describe('what production does not tell', () => {
  it('refuses introspection', async () => {
    const answer = await postGraphql(production.url, { query: '{ __schema { types { name } } }' }, { authorization });
    expect(answer.status).toBe(400);
    expect(json(answer).errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(answer.text).not.toMatch(/Conversation|Query\b.*fields/);
  });

  it('suggests no field names, where development does', async () => {
    const ask = (gateway: TestGateway) =>
      postGraphql(gateway.url, { query: '{ quot conversation(number: 1) { nam } }' }, { authorization });
    const [inProduction, inDevelopment] = await Promise.all([ask(production), ask(development)]);
    expect(json(inDevelopment).errors[0].message).toMatch(/Did you mean "quota"\?/);
    expect(inProduction.status).toBe(400);
    expect(inProduction.text).not.toMatch(/quota|Query|Conversation|name/);
  });

  it('answers a document that fails validation with one error naming nothing of the schema, and its code', async () => {
    // The audit's example: development names the field's type, which tells its name to whoever guesses the field.
    const ask = (gateway: TestGateway) => postGraphql(gateway.url, { query: '{ conversations }' }, { authorization });
    const [inProduction, inDevelopment] = await Promise.all([ask(production), ask(development)]);
    expect(json(inDevelopment).errors[0].message).toContain('of type "ConversationConnection!" must have a selection of subfields');
    expect(inProduction.status).toBe(400);
    const generic = {
      errors: [
        {
          message: 'the operation is not valid (the reason is shown outside production)',
          extensions: { code: 'GRAPHQL_VALIDATION_FAILED' },
        },
      ],
    };
    expect(json(inProduction)).toEqual(generic);
    // One error, without places, however many names are wrong: which ones were right stays untold.
    const several = await postGraphql(
      production.url,
      { query: '{ quota user conversations { totalCount nodes { id email } } viewer }' },
      { authorization },
    );
    expect(json(several)).toEqual(generic);
  });

  it('suggests no type or argument names for bad variables and arguments either', async () => {
    const answers: RawAnswer[] = await Promise.all([
      postGraphql(
        production.url,
        { query: 'query ($id: Int!) { conversation(number: $id) { id } }', variables: { id: 'x' } },
        { authorization },
      ),
      postGraphql(production.url, { query: '{ conversation(di: 1) { id } }' }, { authorization }),
      postGraphql(production.url, { query: 'query ($id: Itn!) { conversation(number: $id) { id } }' }, { authorization }),
    ]);
    for (const answer of answers) {
      expect(answer.status).toBe(400);
      expect(answer.text).not.toMatch(/Did you mean/);
      expect(answer.text).not.toMatch(INTERNALS);
    }
  });

  const hostile: [string, () => Promise<RawAnswer>][] = [
    ['malformed JSON', () => postGraphql(production.url, '{"query":', { authorization })],
    ['a syntax error', () => postGraphql(production.url, { query: '{ conversation(number: ) }' }, { authorization })],
    ['a body over the limit', () => postGraphql(production.url, { query: `{ quota } #${'x'.repeat(200_000)}` }, { authorization })],
    ['an operation over the limits', () => postGraphql(production.url, { query: `{ ${'quota '.repeat(2_000)}}` }, { authorization })],
    ['an unknown operation name', () => postGraphql(production.url, { query: '{ quota }', operationName: 'Nope' }, { authorization })],
    [
      'a variable of the wrong type',
      () =>
        postGraphql(
          production.url,
          { query: 'query ($f: Int) { conversations(first: $f) { totalCount } }', variables: { f: 1.5 } },
          { authorization },
        ),
    ],
    [
      'a cursor from elsewhere',
      () => postGraphql(production.url, { query: '{ conversations(after: "x") { totalCount } }' }, { authorization }),
    ],
    ['an unknown path', () => send(production.url, { path: '/admin' })],
    ['a bad id on REST', () => send(production.url, { path: '/conversation/load?id[$gt]=0', headers: { authorization } })],
    [
      'malformed JSON on /buy',
      () =>
        send(production.url, { method: 'POST', path: '/buy', headers: { authorization, 'content-type': 'application/json' }, body: '{' }),
    ],
  ];
  for (const [name, ask] of hostile) {
    it(`answers ${name} with a 4xx or status:false JSON body and no internals`, async () => {
      const answer = await ask();
      expect(answer.status).toBeLessThan(500);
      expect(answer.headers['content-type']).toMatch(/^application\/json/);
      expect(() => json(answer)).not.toThrow();
      expect(answer.text).not.toMatch(INTERNALS);
    });
  }
});

describe('when the database is gone, in production', () => {
  it('answers a failure without internals, on /graphql and on REST', async () => {
    await production.database.connection.close();
    const graphql = await postGraphql(production.url, { query: '{ quota conversations { totalCount } }' }, { authorization });
    expect(json(graphql).errors.length).toBeGreaterThan(0);
    const rest = [
      await send(production.url, { path: '/conversation/list', headers: { authorization } }),
      await send(production.url, { path: '/quota', headers: { authorization: 'sk-some-key-0123456789abcdef' } }),
    ];
    for (const answer of rest) expect(json(answer).status).toBe(false);
    for (const answer of [graphql, ...rest]) expect(answer.text).not.toMatch(INTERNALS);
  });
});
