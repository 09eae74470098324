import { type DocumentNode, getOperationAST, parse } from 'graphql';
import { describe, expect, it } from 'vitest';

import { Execution } from '../../../src/operations/execution.js';
import { contextFactory, conversation, type FakeWorld, fakeWorld, gatewaySchema, recordingObservation } from '../support/fakes.js';

const schema = gatewaySchema();

function setup(world: FakeWorld = fakeWorld([conversation(1, 1), conversation(1, 2), conversation(2, 1)], { 1: 7_500_000 })) {
  const execution = new Execution(schema);
  const run = async (
    text: string | DocumentNode,
    options: { variables?: Record<string, unknown>; known?: boolean; userId?: number; maxBytes?: number } = {},
  ) => {
    const document = typeof text === 'string' ? parse(text) : text;
    const observation = recordingObservation();
    const context = contextFactory(world, options.maxBytes)({ userId: options.userId ?? 1 }, 'request-1', observation);
    const result = await execution.execute({
      document,
      operation: getOperationAST(document)!,
      context,
      variables: options.variables,
      known: options.known,
    });
    return { result: JSON.parse(JSON.stringify(result)), raw: result, executors: observation.executors };
  };
  return { execution, run, world };
}

describe('the execute stage', () => {
  it('answers a query against the real schema and resolvers, from the caller’s services', async () => {
    const { run } = setup();
    const { result } = await run('{ quota conversations { totalCount nodes { number name } } }');
    expect(result).toEqual({
      data: {
        quota: 7.5,
        conversations: {
          totalCount: 2,
          nodes: [
            { number: 2, name: 'conversation 2' },
            { number: 1, name: 'conversation 1' },
          ],
        },
      },
    });
  });

  it('runs a new document on graphql-js first, then compiled from its second run', async () => {
    const { run } = setup();
    const document = parse('{ quota }');
    expect((await run(document)).executors).toEqual(['graphql-js']);
    expect((await run(document)).executors).toEqual(['compiled']);
    expect((await run(document)).executors).toEqual(['compiled']);
  });

  it('compiles a known operation (the REST table’s) on its first run', async () => {
    const { run } = setup();
    expect((await run('{ quota }', { known: true })).executors).toEqual(['compiled']);
  });

  it('gives the same answer compiled as interpreted', async () => {
    const { run } = setup();
    const document = parse(
      '{ conversations(first: 1) { edges { cursor node { id number messages { role content } } } pageInfo { hasNextPage endCursor } } }',
    );
    const interpreted = await run(document);
    const compiled = await run(document);
    expect(interpreted.executors).toEqual(['graphql-js']);
    expect(compiled.executors).toEqual(['compiled']);
    expect(compiled.result).toEqual(interpreted.result);
    expect(compiled.result.data.conversations.pageInfo.hasNextPage).toBe(true);
  });

  it('runs mutations on graphql-js, every time', async () => {
    const { run, world } = setup();
    const document = parse('mutation { renameConversationByNumber(number: 1, name: "renamed") { ok } }');
    for (let n = 0; n < 3; n += 1) expect((await run(document)).executors).toEqual(['graphql-js']);
    expect(world.conversations.rows.find((row) => row.userId === 1 && row.id === 1)?.name).toBe('renamed');
  });

  it('answers variables that do not coerce in graphql-js’s words, compiled or not', async () => {
    const { run } = setup();
    const document = parse('query Page($n: Int!) { conversations(first: $n) { totalCount } }');
    await run(document, { variables: { n: 1 } });
    const { result, executors } = await run(document, { variables: { n: 'one' } });
    expect(executors).toEqual(['graphql-js']);
    expect(result.data).toBeUndefined();
    expect(result.errors[0].message).toBe('Variable "$n" got invalid value "one"; Int cannot represent non-integer value: "one"');
  });

  it('scopes every read to the caller: another user’s conversation is not found', async () => {
    const { run } = setup();
    expect((await run('{ conversations { totalCount } }', { userId: 2 })).result).toEqual({ data: { conversations: { totalCount: 1 } } });
    expect((await run('{ conversation(number: 2) { name } }', { userId: 2 })).result).toEqual({ data: { conversation: null } });
  });

  it('batches the lookups of one request into one read (DataLoader)', async () => {
    const { run, world } = setup();
    await run('{ a: conversation(number: 1) { name } b: conversation(number: 2) { name } }');
    expect(world.conversations.reads).toEqual(['findMany 1,2']);
  });

  it('refuses a bad page count with BAD_USER_INPUT where it was asked, with a code on a compiled run too', async () => {
    const { run } = setup();
    const document = parse('{ conversations(first: -1) { totalCount } }');
    const interpreted = await run(document);
    const compiled = await run(document);
    for (const { result } of [interpreted, compiled]) {
      expect(result.errors).toEqual([
        {
          message: '`first` must not be negative',
          locations: [{ line: 1, column: 3 }],
          path: ['conversations'],
          extensions: { code: 'BAD_USER_INPUT' },
        },
      ]);
    }
    expect(compiled.executors).toEqual(['compiled']);
  });

  it('answers a read that lost the database with DATABASE_UNAVAILABLE where it failed', async () => {
    const { run, world } = setup();
    world.conversations.unreachable = true;
    const document = parse('{ quota conversation(number: 1) { name } }');
    for (const expected of ['graphql-js', 'compiled']) {
      const { result, executors } = await run(document);
      expect(executors).toEqual([expected]);
      expect(result.data).toEqual({ quota: 7.5, conversation: null });
      expect(result.errors).toMatchObject([
        { message: 'database unavailable, try again later', path: ['conversation'], extensions: { code: 'DATABASE_UNAVAILABLE' } },
      ]);
    }
  });

  it('answers an operation past its response budget with the refusal alone', async () => {
    const big = 'x'.repeat(50_000);
    const world = fakeWorld([conversation(1, 1, [{ role: 'user', content: big }])]);
    const { run } = setup(world);
    const { result } = await run(
      '{ quota a: conversation(number: 1) { messages { content } } b: conversation(number: 1) { messages { content } } }',
      {
        maxBytes: 70_000,
      },
    );
    expect(result.data).toBeUndefined();
    expect(result.errors).toHaveLength(1);
    expect(result.errors[0].extensions).toMatchObject({ code: 'RESPONSE_TOO_LARGE', maxBytes: 70_000, http: { status: 400 } });
  });

  it('answers global ids that name nothing with null, and refuses an id given twice', async () => {
    const { run } = setup();
    const { result: one } = await run('{ node(id: "bm90LWFuLWlk") { id } }');
    expect(one).toEqual({ data: { node: null } });
    const { result: twice } = await run('{ nodes(ids: ["a", "a"]) { id } }');
    expect(twice.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect(twice.errors[0].message).toMatch(/positions 0 and 1/);
  });

  it('resolves the global id it gave back to the same conversation, through `node`', async () => {
    const { run } = setup();
    const { result } = await run('{ conversation(number: 2) { id } }');
    const id = result.data.conversation.id as string;
    expect((await run(`{ node(id: "${id}") { ... on Conversation { number } } }`)).result).toEqual({ data: { node: { number: 2 } } });
    expect((await run(`{ node(id: "${id}") { id } }`, { userId: 2 })).result).toEqual({ data: { node: null } });
  });
});
