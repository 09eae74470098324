import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { graphql, startTestGateway, type TestGateway } from '../support/gateway.js';
import { sample, scrapeMetrics } from '../support/metrics.js';

let gateway: TestGateway;
let authorization: string;

beforeAll(async () => {
  gateway = await startTestGateway();
  await gateway.seed({
    users: [{ id: 1, username: 'alice', quota: 12.5 }],
    conversations: Array.from({ length: 5 }, (_, index) => ({
      userId: 1,
      id: index + 1,
      name: `Chat ${index + 1} — “quoted”`,
      model: 'gpt-4o',
      enableWeb: index % 2 === 0,
      messages: [
        { role: 'user', content: `question ${index + 1}` },
        { role: 'assistant', content: `answer ${index + 1}` },
      ],
    })),
  });
  authorization = `Bearer ${await gateway.token(1)}`;
});

afterAll(() => gateway?.stop());

/** The answer without stack traces (these show which executor ran, which is the point of the difference). */
function withoutStacks(body: unknown): string {
  return JSON.stringify(body, (key, value: unknown) => (key === 'stacktrace' ? undefined : value));
}

/** Which executor ran the operations sent meanwhile, from the gateway's metrics. */
async function executorsDuring(work: () => Promise<unknown>): Promise<{ compiled: number; 'graphql-js': number }> {
  const count = async () => {
    const text = await scrapeMetrics(gateway.url);
    return {
      compiled: sample(text, 'graphql_executions_total', { executor: 'compiled' }),
      'graphql-js': sample(text, 'graphql_executions_total', { executor: 'graphql-js' }),
    };
  };
  const before = await count();
  await work();
  const after = await count();
  return { compiled: after.compiled - before.compiled, 'graphql-js': after['graphql-js'] - before['graphql-js'] };
}

/**
 * Queries run interpreted the first time and compiled afterwards; each case runs three times.
 * The last column says whether the later runs are compiled (a variable that does not coerce never is).
 */
const cases: [string, string, Record<string, unknown> | undefined, boolean][] = [
  [
    'a page with messages',
    '{ conversations(first: 3) { totalCount nodes { id name messages { role content } } pageInfo { hasNextPage endCursor } } }',
    undefined,
    true,
  ],
  [
    'one conversation by variable',
    'query Load($id: Int!) { conversation(number: $id) { id userId name model enableWeb messages { role content } } }',
    { id: 2 },
    true,
  ],
  ['an unknown conversation', 'query Load($id: Int!) { conversation(number: $id) { id } }', { id: 99 }, true],
  [
    'aliases, fragments, directives and __typename',
    'query Q($web: Boolean!) { a: conversation(number: 1) { ...C } b: conversation(number: 2) { ...C enableWeb @include(if: $web) } } fragment C on Conversation { __typename id name @skip(if: $web) }',
    { web: true },
    true,
  ],
  ['a resolver error', '{ conversations(first: -1) { nodes { id } } }', undefined, true],
  ['an error beside data', '{ quota giftPackage { cert } }', undefined, true],
  ['a variable that does not coerce', 'query Load($id: Int!) { conversation(number: $id) { id } }', { id: 'seven' }, false],
  ['introspection', '{ __type(name: "Message") { name fields { name type { kind ofType { name } } } } }', undefined, true],
];

describe('compiled execution', () => {
  it.each(cases)('answers %s exactly as the first, interpreted run did', async (_name, query, variables, compiles) => {
    const runs: { status: number; body: string }[] = [];
    for (let run = 0; run < 3; run++) {
      const executors = await executorsDuring(async () => {
        const { status, body } = await graphql(gateway, query, { authorization, variables });
        runs.push({ status, body: withoutStacks(body) });
      });
      expect(executors).toEqual(run === 0 || !compiles ? { compiled: 0, 'graphql-js': 1 } : { compiled: 1, 'graphql-js': 0 });
    }
    expect(runs[1]).toEqual(runs[0]);
    expect(runs[2]).toEqual(runs[0]);
  });

  it('runs mutations on graphql-js, every time', async () => {
    for (let run = 0; run < 3; run++) {
      const executors = await executorsDuring(() =>
        graphql(gateway, 'mutation { deleteConversationByNumber(number: 404) { ok } }', { authorization }),
      );
      expect(executors).toEqual({ compiled: 0, 'graphql-js': 1 });
    }
  });

  it('keeps error codes and locations of resolver errors', async () => {
    for (let run = 0; run < 3; run++) {
      const { body } = await graphql(gateway, '{ quota giftPackage { cert } }', { authorization });
      expect(body.data).toBeNull();
      expect(body.errors).toEqual([
        expect.objectContaining({
          path: ['giftPackage'],
          locations: [{ line: 1, column: 9 }],
          extensions: expect.objectContaining({ code: 'UNAVAILABLE' }),
        }),
      ]);
    }
  });
});
