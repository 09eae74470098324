import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { graphql, startTestGateway, type TestGateway } from '../support/gateway.js';

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

/** Queries run interpreted the first time and compiled afterwards; each case runs three times. */
const cases: [string, string, Record<string, unknown>?][] = [
  ['a page with messages', '{ conversations(first: 3) { totalCount nodes { id name messages { role content } } pageInfo { hasNextPage endCursor } } }'],
  ['one conversation by variable', 'query Load($id: Int!) { conversation(id: $id) { id userId name model enableWeb messages { role content } } }', { id: 2 }],
  ['an unknown conversation', 'query Load($id: Int!) { conversation(id: $id) { id } }', { id: 99 }],
  ['aliases, fragments, directives and __typename', 'query Q($web: Boolean!) { a: conversation(id: 1) { ...C } b: conversation(id: 2) { ...C enableWeb @include(if: $web) } } fragment C on Conversation { __typename id name @skip(if: $web) }', { web: true }],
  ['a resolver error', '{ conversations(first: -1) { nodes { id } } }'],
  ['an error beside data', '{ quota giftPackage { cert } }'],
  ['a variable that does not coerce', 'query Load($id: Int!) { conversation(id: $id) { id } }', { id: 'seven' }],
  ['introspection', '{ __type(name: "Message") { name fields { name type { kind ofType { name } } } } }'],
];

describe('compiled execution', () => {
  it.each(cases)('answers %s exactly as the first, interpreted run did', async (_name, query, variables) => {
    const runs = [];
    for (let run = 0; run < 3; run++) {
      const { status, body } = await graphql(gateway, query, { authorization, variables });
      runs.push({ status, body: withoutStacks(body) });
    }
    expect(runs[1]).toEqual(runs[0]);
    expect(runs[2]).toEqual(runs[0]);
  });

  it('keeps error codes and locations of resolver errors', async () => {
    for (let run = 0; run < 3; run++) {
      const { body } = await graphql(gateway, '{ quota giftPackage { cert } }', { authorization });
      expect(body.data).toBeNull();
      expect(body.errors).toEqual([
        expect.objectContaining({ path: ['giftPackage'], locations: [{ line: 1, column: 9 }], extensions: expect.objectContaining({ code: 'UNAVAILABLE' }) }),
      ]);
    }
  });
});
