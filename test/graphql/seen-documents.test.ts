import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { BROKEN, seedBrokenConversation } from '../support/broken-conversation.js';
import { startGatewayWithCapturedLog } from '../support/captured-log.js';
import { sample, scrapeMetrics } from '../support/metrics.js';

/**
 * `/graphql` answers a query document it has seen before from compiled code, without Apollo
 * Server's request pipeline. Apollo Server answered the first request; every later answer must be
 * the same to the byte (status, headers, body), counted, logged and limited alike.
 */
const METRICS_TOKEN = 'metrics-token-0123456789';

type Gateway = Awaited<ReturnType<typeof startGatewayWithCapturedLog>>;
let production: Gateway;
let development: Gateway;
let authorization: string;

async function seeded(environment: Record<string, string>): Promise<Gateway> {
  const gateway = await startGatewayWithCapturedLog({ METRICS_TOKEN, ...environment });
  authorization = await seedBrokenConversation(gateway);
  return gateway;
}

beforeAll(async () => {
  [production, development] = await Promise.all([seeded({ NODE_ENV: 'production' }), seeded({ NODE_ENV: 'development' })]);
});
afterAll(() => Promise.all([production?.stop(), development?.stop()]));

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

async function post(gateway: Gateway, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(`${gateway.url}/graphql`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  const requestId = response.headers.get('x-request-id')!;
  const { date: _date, 'x-request-id': _id, ...rest } = Object.fromEntries(response.headers);
  // An internal error names its request: the same answer names another id each time, and so has another ETag.
  const namesRequest = text.includes(requestId);
  const { etag: _etag, ...withoutEtag } = rest;
  return { status: response.status, headers: namesRequest ? withoutEtag : rest, body: text.replaceAll(requestId, '<request id>') };
}

const LOAD = 'query Load($id: Int!) { conversation(id: $id) { id name model enableWeb messages { role content } } }';
const TWO_OPERATIONS = 'query Quota { quota } query Page { conversations(first: 2) { totalCount nodes { id name } } }';
/** A text of its own for each case, so that Apollo Server answers each case's first request. */
const loadNamed = (name: string) => LOAD.replace('Load', name);

const cases: [string, Record<string, unknown>, Record<string, string>][] = [
  ['an anonymous page', { query: '{ conversations(first: 5) { totalCount nodes { id name } pageInfo { hasNextPage endCursor } } }' }, {}],
  ['a named operation with variables', { query: LOAD, operationName: 'Load', variables: { id: 1 } }, {}],
  ['one operation of two, by name', { query: TWO_OPERATIONS, operationName: 'Quota' }, {}],
  ['the other operation of the same text', { query: TWO_OPERATIONS, operationName: 'Page' }, {}],
  ['an unknown conversation', { query: loadNamed('Unknown'), variables: { id: 404 } }, {}],
  ['an error beside data', { query: '{ quota giftPackage { cert } }' }, {}],
  ['a resolver refusing its argument', { query: '{ conversations(first: -1) { nodes { id } } }' }, {}],
  ['an unexpected error, masked', { query: loadNamed('Masked'), variables: { id: BROKEN }, operationName: null, extensions: {} }, {}],
  ['the GraphQL response media type', { query: 'query MediaType { quota }' }, { accept: 'application/graphql-response+json' }],
  ['a weighed Accept', { query: 'query Weighed { quota }' }, { accept: 'application/json;q=0.5, application/graphql-response+json' }],
  ['an operation name the document does not have', { query: 'query Named { quota }', operationName: 'Other' }, {}],
];

describe('a query document /graphql has seen before', () => {
  it.each(cases)('%s: answered the same to the byte every time', async (_name, body, headers) => {
    const answers: Answer[] = [];
    for (let run = 0; run < 3; run++) answers.push(await post(production, body, headers));
    expect(answers[0]!.body.length).toBeGreaterThan(0);
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
  });

  it('is answered from compiled code without Apollo Server’s pipeline, as the stack of a resolver’s error shows', async () => {
    const stacks: string[] = [];
    for (let run = 0; run < 3; run++) {
      const { body } = await post(development, { query: '{ conversations(first: -1) { nodes { id } } }' });
      stacks.push((JSON.parse(body) as { errors: { extensions: { stacktrace: string[] } }[] }).errors[0]!.extensions.stacktrace.join('\n'));
    }
    expect(stacks[0]).toContain('@apollo/server');
    expect(stacks[2]).not.toContain('@apollo/server');
    expect(stacks[2]).toContain('seen-documents');
  });

  it('leaves to Apollo Server what it refuses before running: variables that do not coerce, an Accept it cannot answer, a cost over the limit', async () => {
    const pages = ['a', 'b', 'c'].map((alias) => `${alias}: conversations(first: $n) { nodes { messages { role content } } }`);
    // Three pages of 100 with their messages cost 6 306, of 1 cost 69 (the limit is 5 000).
    const page = `query P($n: Int!) { ${pages.join(' ')} }`;
    expect((await post(production, { query: page, variables: { n: 1 } })).status).toBe(200);
    expect((await post(production, { query: page, variables: { n: 1 } })).status).toBe(200);
    const overCost = await post(production, { query: page, variables: { n: 100 } });
    expect(overCost.status).toBe(400);
    expect(JSON.parse(overCost.body)).toMatchObject({ errors: [{ extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } }] });

    for (let run = 0; run < 2; run++) expect((await post(production, { query: LOAD, variables: { id: 1 } })).status).toBe(200);
    const notCoerced = await post(production, { query: LOAD, variables: { id: 'seven' } });
    expect(notCoerced.status).toBe(400);
    expect(JSON.parse(notCoerced.body)).toMatchObject({ errors: [{ extensions: { code: 'BAD_USER_INPUT' } }] });
    const unacceptable = await post(production, { query: LOAD, variables: { id: 1 } }, { accept: 'text/plain' });
    expect(unacceptable.status).toBe(406);
  });

  it('runs a document seen without an operation name only for requests naming none, not for an empty name', async () => {
    const query = '{ quota conversations(first: 1) { totalCount } }';
    const seenWithoutName = [await post(production, { query }), await post(production, { query })];
    expect(seenWithoutName.map((answer) => answer.status)).toEqual([200, 200]);
    const emptyName = await post(production, { query, operationName: '' });
    expect(emptyName.status).toBe(400);
    expect(JSON.parse(emptyName.body)).toMatchObject({ errors: [{ message: 'Unknown operation named "".' }] });
  });

  it('is counted as an operation and named in the request log, once per request', async () => {
    const query = 'query CountedQuota { quota }';
    await post(production, { query });
    const before = await scrapeMetrics(production.url, METRICS_TOKEN);
    const answers = [await post(production, { query }), await post(production, { query })];
    const after = await scrapeMetrics(production.url, METRICS_TOKEN);
    expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
    const labels = { operation_name: 'CountedQuota', operation_type: 'query', result: 'success' };
    expect(sample(after, 'graphql_operations_total', labels) - sample(before, 'graphql_operations_total', labels)).toBe(2);
    expect(
      sample(after, 'graphql_executions_total', { executor: 'compiled' }) -
        sample(before, 'graphql_executions_total', { executor: 'compiled' }),
    ).toBe(2);
    const logged = production.log.lines().filter((line) => line.operation === 'CountedQuota');
    expect(logged).toHaveLength(3);
    expect(logged.every((line) => line.status === 200)).toBe(true);
  });

  it('logs an unexpected error once, with its request and operation', async () => {
    const before = production.log.lines().length;
    const answers = [];
    for (let run = 0; run < 3; run++) answers.push(await post(production, { query: loadNamed('Logged'), variables: { id: BROKEN } }));
    const logged = production.log
      .lines()
      .slice(before)
      .filter((line) => line.msg === 'unexpected error in a GraphQL operation');
    expect(logged).toHaveLength(3);
    expect(logged.every((line) => line.operation === 'Logged')).toBe(true);
  });
});
