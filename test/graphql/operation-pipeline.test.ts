import type { ApolloServerPlugin } from '@apollo/server';
import { print } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { RequestContext } from '../../src/context.js';
import { legacyRoutes } from '../../src/rest/routes.js';
import { BROKEN, seedBrokenConversation } from '../support/broken-conversation.js';
import { type CapturedLog, captureLog } from '../support/captured-log.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { sample, scrapeMetrics } from '../support/metrics.js';

/**
 * Every GraphQL operation, from any door, runs through the one operation pipeline, and every
 * `/graphql` request through Apollo Server's whole request pipeline: a plugin installed on it sees
 * each request, the first and the repeated ones, queries and mutations.
 */
interface Seen {
  started: number;
  parsed: number;
  resolved: string[];
  executed: number;
  answered: number;
}

const METRICS_TOKEN = 'metrics-token-0123456789';

const seen: Seen = { started: 0, parsed: 0, resolved: [], executed: 0, answered: 0 };
const countingPlugin: ApolloServerPlugin<RequestContext> = {
  async requestDidStart() {
    seen.started += 1;
    return {
      async parsingDidStart() {
        seen.parsed += 1;
      },
      async didResolveOperation({ operationName }) {
        seen.resolved.push(operationName ?? 'anonymous');
      },
      async executionDidStart() {
        seen.executed += 1;
      },
      async willSendResponse() {
        seen.answered += 1;
      },
    };
  },
};

let gateway: TestGateway;
let production: TestGateway;
let log: CapturedLog;
let authorization: string;

beforeAll(async () => {
  log = captureLog();
  [gateway, production] = await Promise.all([
    startTestGateway({}, { apolloPlugins: [countingPlugin] }),
    startTestGateway({ NODE_ENV: 'production', METRICS_TOKEN }, { logger: log.logger }),
  ]);
  authorization = await seedBrokenConversation(gateway);
  await seedBrokenConversation(production);
});
afterAll(() => Promise.all([gateway?.stop(), production?.stop()]));

async function post(target: TestGateway, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const response = await fetch(`${target.url}/graphql`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  const requestId = response.headers.get('x-request-id')!;
  const { date: _date, 'x-request-id': _id, ...headersSeen } = Object.fromEntries(response.headers);
  // An internal error names its request: the same answer names another id each time, and so has another ETag.
  const { etag: _etag, ...withoutEtag } = headersSeen;
  return {
    status: response.status,
    headers: text.includes(requestId) ? withoutEtag : headersSeen,
    body: text.replaceAll(requestId, '<request id>'),
  };
}

const delta = (before: Seen): Seen => ({
  started: seen.started - before.started,
  parsed: seen.parsed - before.parsed,
  resolved: seen.resolved.slice(before.resolved.length),
  executed: seen.executed - before.executed,
  answered: seen.answered - before.answered,
});

describe('/graphql', () => {
  it('goes through Apollo Server for every request, first and repeated, query and mutation: a plugin sees each one', async () => {
    const before = { ...seen, resolved: [...seen.resolved] };
    const query = 'query Balance { quota }';
    const mutation = 'mutation Remove($id: Int!) { deleteConversationByNumber(number: $id) { ok } }';
    for (let run = 0; run < 3; run++) expect((await post(gateway, { query })).status).toBe(200);
    for (let run = 0; run < 2; run++) expect((await post(gateway, { query: mutation, variables: { id: 404 } })).status).toBe(200);
    // Parsed once per text; every request resolved, executed and answered.
    expect(delta(before)).toEqual({
      started: 5,
      parsed: 2,
      resolved: ['Balance', 'Balance', 'Balance', 'Remove', 'Remove'],
      executed: 5,
      answered: 5,
    });
  });

  it('finds a document the REST layer already checked in the one document cache, without parsing it again', async () => {
    const listText = print(legacyRoutes.find((route) => route.path === '/conversation/list')!.operation);
    expect((await fetch(`${gateway.url}/conversation/list`, { headers: { authorization } })).status).toBe(200);
    const before = { ...seen, resolved: [...seen.resolved] };
    expect((await post(gateway, { query: listText })).status).toBe(200);
    expect(delta(before)).toMatchObject({ started: 1, parsed: 0, resolved: ['ListConversations'] });
  });

  const cases: [string, Record<string, unknown>, Record<string, string>][] = [
    ['an anonymous page', { query: '{ conversations(first: 5) { totalCount nodes { id name } pageInfo { hasNextPage endCursor } } }' }, {}],
    [
      'one operation of two, by name',
      { query: 'query Quota { quota } query Page { conversations(first: 2) { nodes { id } } }', operationName: 'Page' },
      {},
    ],
    ['an error beside data', { query: '{ quota giftPackage { cert } }' }, {}],
    ['a resolver refusing its argument', { query: '{ conversations(first: -1) { nodes { id } } }' }, {}],
    [
      'an unexpected error, masked',
      { query: 'query Masked($id: Int!) { conversation(number: $id) { name messages { role } } }', variables: { id: BROKEN } },
      {},
    ],
    ['the GraphQL response media type', { query: 'query MediaType { quota }' }, { accept: 'application/graphql-response+json' }],
  ];

  it.each(cases)('answers %s the same to the byte every time, interpreted first and compiled after', async (_name, body, headers) => {
    const compiled = async () =>
      sample(await scrapeMetrics(production.url, METRICS_TOKEN), 'graphql_executions_total', { executor: 'compiled' });
    const answers = [];
    const compiledBefore = await compiled();
    for (let run = 0; run < 3; run++) answers.push(await post(production, body, headers));
    expect(await compiled()).toBe(compiledBefore + 2);
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
  });

  it('logs an unexpected error once per request, with its request id and operation', async () => {
    const before = log.lines().length;
    const requestIds: string[] = [];
    for (let run = 0; run < 3; run++) {
      const response = await fetch(`${production.url}/graphql`, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json' },
        body: JSON.stringify({
          query: 'query Logged($id: Int!) { conversation(number: $id) { name messages { role } } }',
          variables: { id: BROKEN },
        }),
      });
      const body = (await response.json()) as { errors: { extensions: { requestId: string } }[] };
      expect(body.errors[0]!.extensions.requestId).toBe(response.headers.get('x-request-id'));
      requestIds.push(body.errors[0]!.extensions.requestId);
    }
    const logged = log
      .lines()
      .slice(before)
      .filter((line) => line.msg === 'unexpected error in a GraphQL operation');
    expect(logged.map((line) => [line.requestId, line.operation])).toEqual(requestIds.map((id) => [id, 'Logged']));
  });
});
