import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { parse, print } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { OPERATION_LIMITS } from '../../src/limits.js';
import { defineRoute, succeeded } from '../../src/rest/route.js';
import { legacyRoutes } from '../../src/rest/routes.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { sample, scrapeMetrics } from '../support/metrics.js';
import { json, postGraphql, type RawAnswer, send } from './http.js';

const ALICE = 1;

let gateway: TestGateway;
let authorization: string;

beforeAll(async () => {
  gateway = await startTestGateway();
  await gateway.seed({
    users: [{ id: ALICE, username: 'alice', quota: 12.5 }],
    conversations: Array.from({ length: 30 }, (_, index) => ({
      userId: ALICE,
      id: index + 1,
      name: `Conversation ${index + 1}`,
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'hello' }],
    })),
  });
  authorization = `Bearer ${await gateway.token(ALICE)}`;
});

afterAll(() => gateway?.stop());

const repeat = (count: number, piece: (index: number) => string) => Array.from({ length: count }, (_, index) => piece(index)).join(' ');

/** Posts the operation and also returns the database commands it caused. */
async function run(query: string, variables?: Record<string, unknown>): Promise<{ answer: RawAnswer; commands: string[] }> {
  let answer!: RawAnswer;
  const commands = await gateway.commandsDuring(async () => {
    answer = await postGraphql(gateway.url, { query, variables }, { authorization });
  });
  return { answer, commands };
}

/** A refusal: HTTP 400, the expected code and message, and not one database command (no resolver ran). */
async function expectRefused(query: string, code: string, message: RegExp, variables?: Record<string, unknown>) {
  const { answer, commands } = await run(query, variables);
  expect(answer.status).toBe(400);
  const body = json(answer);
  expect(body.data).toBeUndefined();
  expect(body.errors[0].extensions.code).toBe(code);
  expect(body.errors[0].message).toMatch(message);
  expect(commands).toEqual([]);
}

async function expectAnswered(query: string, variables?: Record<string, unknown>) {
  const { answer } = await run(query, variables);
  expect(answer.status, answer.text).toBe(200);
  expect(json(answer).errors).toBeUndefined();
  return json(answer).data;
}

describe('limits on /graphql', () => {
  it(`answers ${OPERATION_LIMITS.aliases} aliases and refuses one more`, async () => {
    await expectAnswered(`{ ${repeat(OPERATION_LIMITS.aliases, (i) => `a${i}: quota`)} }`);
    await expectRefused(
      `{ ${repeat(OPERATION_LIMITS.aliases + 1, (i) => `a${i}: quota`)} }`,
      'GRAPHQL_VALIDATION_FAILED',
      /Aliases limit of 15 exceeded, found 16/,
    );
  });

  it('counts aliases of __typename like any other', async () => {
    await expectAnswered(`{ ${repeat(OPERATION_LIMITS.aliases, (i) => `t${i}: __typename`)} }`);
    // The audit sent 300, which the limit let through.
    await expectRefused(
      `{ ${repeat(300, (i) => `t${i}: __typename`)} }`,
      'GRAPHQL_VALIDATION_FAILED',
      /Aliases limit of 15 exceeded, found 300/,
    );
  });

  it('counts aliases hidden in fragments', async () => {
    await expectRefused(
      `{ ...A ...B } fragment A on Query { ${repeat(8, (i) => `a${i}: quota`)} } fragment B on Query { ${repeat(8, (i) => `b${i}: quota`)} }`,
      'GRAPHQL_VALIDATION_FAILED',
      /Aliases limit/,
    );
  });

  it('answers the deepest path of the schema, through fragments too, and refuses fields nested deeper than 6', async () => {
    await expectAnswered('{ conversations(first: 1) { edges { node { messages { role } } } } }');
    await expectAnswered(
      '{ conversations(first: 1) { edges { node { ...Full } } } } fragment Full on Conversation { id ... on Conversation { messages { role } } }',
    );
    // The schema's own types nest no deeper than 5; introspection's do.
    await expectRefused(
      '{ __type(name: "Query") { fields { type { fields { type { fields { name } } } } } } }',
      'GRAPHQL_VALIDATION_FAILED',
      /depth limit of 6 exceeded, found 7/,
    );
  });

  it(`refuses more than ${OPERATION_LIMITS.directives} directives`, async () => {
    await expectAnswered(`{ ${repeat(OPERATION_LIMITS.directives, () => 'quota @include(if: true)')} }`);
    await expectRefused(
      `{ ${repeat(OPERATION_LIMITS.directives + 1, () => 'quota @include(if: true)')} }`,
      'GRAPHQL_VALIDATION_FAILED',
      /Directives limit of 10 exceeded, found 11/,
    );
  });

  it(`refuses a document of more than ${OPERATION_LIMITS.tokens} tokens while parsing`, async () => {
    // `{`, `}` and 499 × `quota` is 501 tokens; 1 000 × `quota` is 1 002.
    await expectAnswered(`{ ${repeat(499, () => 'quota')} }`);
    await expectRefused(`{ ${repeat(1_000, () => 'quota')} }`, 'GRAPHQL_PARSE_FAILED', /contains more th.. 1000 tokens/);
  });

  describe('cost, which multiplies a page by its size', () => {
    const twoPages = (argument: string, variables = '') => `query Pages${variables} {
      a: conversations${argument} { nodes { id name messages { role content } } }
      b: conversations${argument} { nodes { id name messages { role content } } }
    }`;
    // Each page: 1 + first × (1 node + 2 fields + 10 assumed messages × 3) = 1 + 33 × first.
    const refusedCost = /Operation cost limit of 5000 exceeded, found 6602\./;

    it('answers one page of 100 conversations with their messages', async () => {
      const data = await expectAnswered('{ conversations { nodes { id name messages { role content } } } }');
      expect(data.conversations.nodes).toHaveLength(30);
    });

    it('refuses two such pages, given as literals, on every request, whatever its variables', async () => {
      // A cost that reads no variable is priced once per document: the later requests are refused from that price.
      const literalPages = `query Pages($withName: Boolean = true) {
        a: conversations(first: 100) { nodes { id name @include(if: $withName) messages { role content } } }
        b: conversations(first: 100) { nodes { id name @include(if: $withName) messages { role content } } }
      }`;
      await expectRefused(literalPages, 'GRAPHQL_VALIDATION_FAILED', refusedCost);
      await expectRefused(literalPages, 'GRAPHQL_VALIDATION_FAILED', refusedCost, { withName: false });
      await expectRefused(literalPages, 'GRAPHQL_VALIDATION_FAILED', refusedCost);
      await expectAnswered(twoPages('(first: 10)'));
      await expectAnswered(twoPages('(first: 10)'));
    });

    it('counts an omitted `first` (and `last`) as the default of 100', async () => {
      await expectRefused(twoPages(''), 'GRAPHQL_VALIDATION_FAILED', refusedCost);
    });

    it('reads `first` from the variables of each request, not once per document', async () => {
      const query = twoPages('(first: $first)', '($first: Int)');
      await expectAnswered(query, { first: 10 });
      await expectRefused(query, 'GRAPHQL_VALIDATION_FAILED', refusedCost, { first: 100 });
      await expectRefused(query, 'GRAPHQL_VALIDATION_FAILED', refusedCost, {});
      await expectAnswered(query, { first: 10 });
    });

    it('caps `first` at the page size the resolvers allow', async () => {
      await expectRefused(twoPages('(first: $first)', '($first: Int)'), 'GRAPHQL_VALIDATION_FAILED', refusedCost, { first: 1_000_000 });
    });

    it('sizes a page by `last` as by `first`, and by the larger when both are given', async () => {
      await expectRefused(twoPages('(last: 100)'), 'GRAPHQL_VALIDATION_FAILED', refusedCost);
      await expectAnswered(twoPages('(last: 10)'));
      await expectRefused(twoPages('(first: 1, last: 100)'), 'GRAPHQL_VALIDATION_FAILED', refusedCost);
    });

    it('sizes `nodes` by the ids it is given', async () => {
      const twoLists = `query Lists($ids: [ID!]!) {
        a: nodes(ids: $ids) { id ... on Conversation { name messages { role content } } }
        b: nodes(ids: $ids) { id ... on Conversation { name messages { role content } } }
      }`;
      // Each list: ids × (1 node + 2 fields + 10 assumed messages × 3) = 33 × ids.
      await expectAnswered(twoLists, { ids: Array.from({ length: 10 }, (_, index) => `id${index}`) });
      await expectRefused(twoLists, 'GRAPHQL_VALIDATION_FAILED', /Operation cost limit of 5000 exceeded, found 6600\./, {
        ids: Array.from({ length: 100 }, (_, index) => `id${index}`),
      });
    });

    it('prices fragments that spread fragments twice over, 60 levels deep, at once', async () => {
      const levels = 60;
      const fragments = Array.from({ length: levels }, (_, level) =>
        level === levels - 1
          ? `fragment F${level} on Query { quota }`
          : `fragment F${level} on Query { ...F${level + 1} ...F${level + 1} }`,
      ).join(' ');
      const { answer } = await run(`{ ...F0 } ${fragments}`);
      // Priced, not expanded: 2^60 spreads could not be walked within the test's timeout on any machine.
      expect(json(answer).errors[0].message).toMatch(/cost limit of 5000 exceeded, found 5764\d{14}\./);
    });

    it('counts a fragment at its full cost each time it is spread', async () => {
      // Each spread: 1 + 100 × (1 node + 1 field) = 201; 24 of them cost 4 824, 25 cost 5 025.
      const spreads = (count: number) =>
        `{ ${repeat(count, () => '...Page')} } fragment Page on Query { conversations { nodes { name } } }`;
      await expectAnswered(spreads(24));
      await expectRefused(spreads(25), 'GRAPHQL_VALIDATION_FAILED', /cost limit of 5000 exceeded, found 5025/);
    });
  });
});

// Each refusal names the limit that stopped the work, which bounds it whatever the machine's speed.
describe('hostile documents are refused by a limit, before the work they would cost', () => {
  it('refuses a 2 MB document with 413 by its declared length', async () => {
    const query = `{ ${repeat(200_000, (i) => `a${i}: quota`)} }`;
    expect(query.length).toBeGreaterThan(2_000_000);
    const answer = await postGraphql(gateway.url, { query }, { authorization });
    expect(answer.status).toBe(413);
    expect(json(answer).errors[0]).toMatchObject({ extensions: { code: 'BAD_REQUEST' } });
  });

  it('refuses a document just under the body limit with 5 000 aliases by the token limit', async () => {
    const query = `{ ${repeat(5_000, (i) => `a${i}: quota`)} }`;
    expect(query.length).toBeGreaterThan(50_000);
    const answer = await postGraphql(gateway.url, { query }, { authorization });
    expect(answer.status).toBe(400);
    expect(json(answer).errors[0].extensions.code).toBe('GRAPHQL_PARSE_FAILED');
    expect(json(answer).errors[0].message).toMatch(/contains more th.. 1000 tokens/);
  });

  it('refuses a document of 16 000 tokens just under the body limit by the token limit', async () => {
    const query = `{ ${repeat(16_000, () => 'quota')} }`;
    const body = JSON.stringify({ query });
    expect(body.length).toBeGreaterThan(95_000);
    expect(body.length).toBeLessThan(100 * 1024);
    const answer = await postGraphql(gateway.url, body, { authorization });
    expect(answer.status).toBe(400);
    expect(json(answer).errors[0].message).toMatch(/contains more th.. 1000 tokens/);
  });
});

describe('the REST layer', () => {
  /** A route of the real app that runs `query` and answers its data as `{"status":true,"data":…}`. */
  const routeRunning = (path: string, query: string) =>
    defineRoute({
      method: 'GET',
      path,
      summary: path,
      operation: parse(query) as TypedDocumentNode<Record<string, unknown>, Record<string, never>>,
      failureField: 'error',
      input: { from: 'nothing' },
      answers: z.object({ status: z.literal(true), data: z.record(z.string(), z.unknown()) }),
      respond: (data) => succeeded({ data }),
    });
  const aliases = (count: number) => `query Aliases { ${repeat(count, (i) => `a${i}: quota`)} }`;
  const twoPages = (first: number) =>
    `query Pages { a: conversations(first: ${first}) { nodes { id name messages { role content } } } b: conversations(first: ${first}) { nodes { id name messages { role content } } } }`;

  it('runs its operations through the same limits as /graphql, refusing them before any resolver runs', async () => {
    const rest = await startTestGateway(
      {},
      {
        restRoutes: [
          routeRunning('/aliases/15', aliases(15)),
          routeRunning('/aliases/16', aliases(16)),
          routeRunning('/pages/10', twoPages(10)),
          routeRunning('/pages/100', twoPages(100)),
        ],
      },
    );
    try {
      await rest.seed({ users: [{ id: ALICE, username: 'alice', quota: 12.5 }] });
      const headers = { authorization: `Bearer ${await rest.token(ALICE)}` };
      for (const path of ['/aliases/15', '/pages/10']) {
        const answer = await send(rest.url, { path, headers });
        expect(answer.status, answer.text).toBe(200);
        expect(json(answer).status).toBe(true);
      }
      for (const path of ['/aliases/16', '/pages/100']) {
        const refusals = sample(await scrapeMetrics(rest.url), 'graphql_errors_total', { code: 'GRAPHQL_VALIDATION_FAILED' });
        let answer!: RawAnswer;
        const commands = await rest.commandsDuring(async () => {
          answer = await send(rest.url, { path, headers });
        });
        // The REST layer's own operations never fail validation: a refusal is its internal error.
        expect(answer.status).toBe(500);
        expect(json(answer)).toEqual({ status: false, error: 'internal error', request_id: answer.headers['x-request-id'] });
        expect(commands).toEqual([]);
        expect(sample(await scrapeMetrics(rest.url), 'graphql_errors_total', { code: 'GRAPHQL_VALIDATION_FAILED' })).toBe(refusals + 1);
      }
    } finally {
      await rest.stop();
    }
  });

  for (const route of legacyRoutes) {
    it(`keeps the operation of ${route.method} ${route.path} within every limit`, async () => {
      const variables = { id: 1, quota: 1, name: 'Renamed' };
      const operation = route.operation.definitions[0]!;
      const wanted =
        operation.kind === 'OperationDefinition' ? (operation.variableDefinitions ?? []).map((v) => v.variable.name.value) : [];
      const { answer } = await run(
        print(route.operation),
        Object.fromEntries(wanted.map((name) => [name, variables[name as keyof typeof variables]])),
      );
      const codes = (json(answer).errors ?? []).map((error: { extensions: { code: string } }) => error.extensions.code);
      expect(codes).not.toContain('GRAPHQL_VALIDATION_FAILED');
      expect(codes).not.toContain('GRAPHQL_PARSE_FAILED');
      expect(answer.status).toBe(200);
    });
  }
});
