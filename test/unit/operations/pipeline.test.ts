import { describe, expect, it } from 'vitest';

import { rateLimited } from '../../../src/errors.js';
import { type Admission, AdmissionChecks } from '../../../src/operations/admission.js';
import { conversation, fakeWorld, metricValue, testPipeline } from '../support/fakes.js';

function running(options: Parameters<typeof testPipeline>[0] = {}) {
  const setup = testPipeline({ world: fakeWorld([conversation(1, 1)], { 1: 2_000_000 }), ...options });
  const run = async (text: string, extra: { operationName?: string; variables?: Record<string, unknown>; userId?: number } = {}) => {
    const observation = setup.pipeline.observer.start('rest', 'request-1');
    const context = setup.createContext({ userId: extra.userId ?? 1 }, 'request-1', observation);
    const result = await setup.pipeline.run({ text, operationName: extra.operationName, variables: extra.variables }, context);
    return JSON.parse(JSON.stringify(result));
  };
  return { ...setup, run };
}

describe('OperationPipeline.run', () => {
  it('runs an operation through every stage and answers its result', async () => {
    const { run } = running();
    expect(await run('{ quota conversation(number: 1) { name } }')).toEqual({
      data: { quota: 2, conversation: { name: 'conversation 1' } },
    });
  });

  it('runs the operation a document names, and refuses a document of several without a name', async () => {
    const { run } = running();
    const text = 'query A { quota } query B { conversations { totalCount } }';
    expect(await run(text, { operationName: 'B' })).toEqual({ data: { conversations: { totalCount: 1 } } });
    expect(await run(text)).toMatchObject({
      errors: [{ message: 'the document must name one operation (operationName) to run', extensions: { code: 'BAD_REQUEST' } }],
    });
    expect(await run(text, { operationName: 'C' })).toMatchObject({ errors: [{ extensions: { code: 'BAD_REQUEST' } }] });
  });

  it('refuses an invalid document before anything runs, with its validation errors', async () => {
    const { run, world } = running();
    expect(await run('{ conversation(number: 1) { nope } }')).toMatchObject({
      errors: [
        {
          message: 'Cannot query field "nope" on type "Conversation". Did you mean "name"?',
          extensions: { code: 'GRAPHQL_VALIDATION_FAILED' },
        },
      ],
    });
    expect(world.conversations.reads).toEqual([]);
  });

  it('refuses an operation over the cost limit before anything runs', async () => {
    const { run, world } = running();
    const text =
      'query Page($n: Int) { a: conversations(first: $n) { nodes { messages { role content } } } b: conversations(first: $n) { nodes { messages { role content } } } }';
    const refused = await run(text, { variables: { n: 100 } });
    expect(refused.data).toBeUndefined();
    expect(refused.errors[0].message).toMatch(/^Operation cost limit of 5000 exceeded/);
    expect(world.conversations.reads).toEqual([]);
    expect((await run(text, { variables: { n: 1 } })).data.a.nodes).toHaveLength(1);
  });

  it('counts each operation once in the metrics, by name, type and result', async () => {
    const { run, registry } = running();
    await run('query Balance { quota }');
    await run('query Balance { quota }');
    await run('query Broken { nope }');
    expect(
      await metricValue(registry, 'graphql_operations_total', { operation_name: 'Balance', operation_type: 'query', result: 'success' }),
    ).toBe(2);
    // An invalid document never resolves to an operation.
    expect(await metricValue(registry, 'graphql_operations_total', { operation_name: '(unresolved)', result: 'error' })).toBe(1);
    expect(await metricValue(registry, 'graphql_errors_total', { code: 'GRAPHQL_VALIDATION_FAILED' })).toBe(1);
    expect(await metricValue(registry, 'graphql_executions_total', { executor: 'graphql-js' })).toBe(1);
    expect(await metricValue(registry, 'graphql_executions_total', { executor: 'compiled' })).toBe(1);
  });

  it('logs an unexpected error once, with its request, door and operation', async () => {
    const { run, lines, world } = running();
    world.conversations.rows.push({ userId: 1, id: 9, name: null as unknown as string, model: 'm', enableWeb: false, messages: [] });
    const answer = await run('query Named { conversation(number: 9) { name } }');
    // No code: internal (the format stage masks it in production).
    expect(answer.errors).toMatchObject([
      { message: 'Cannot return null for non-nullable field Conversation.name.', path: ['conversation', 'name'] },
    ]);
    expect(answer.errors[0].extensions?.code).toBeUndefined();
    const logged = lines.filter((line) => line.msg === 'unexpected error in a GraphQL operation');
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ requestId: 'request-1', door: 'rest', operation: 'Named' });
  });

  it('does not log an expected failure', async () => {
    const { run, lines } = running();
    await run('{ conversations(first: -1) { totalCount } }');
    expect(lines.filter((line) => line.level === 50)).toEqual([]);
  });
});

describe('the admission sequence', () => {
  const admission: Admission = { caller: { userId: 1 }, door: 'rest', requestId: 'r' };

  it('runs every check, in order', async () => {
    const seen: string[] = [];
    const checks = new AdmissionChecks([() => void seen.push('first'), async () => void seen.push('second')]);
    await checks.admit(admission);
    expect(seen).toEqual(['first', 'second']);
  });

  it('stops at the first check that refuses, and the refusal is what the door answers', async () => {
    const seen: string[] = [];
    const checks = new AdmissionChecks([
      () => {
        throw rateLimited(3);
      },
      () => void seen.push('second'),
    ]);
    await expect(checks.admit(admission)).rejects.toMatchObject({ kind: 'rateLimited', headers: { 'Retry-After': '3' } });
    expect(seen).toEqual([]);
  });

  it('is the list the pipeline was given', async () => {
    const seen: Admission[] = [];
    const { pipeline } = testPipeline({ admissionChecks: [(admitted) => void seen.push(admitted)] });
    await pipeline.admission.admit({ ...admission, door: 'websocket' });
    expect(seen).toEqual([{ ...admission, door: 'websocket' }]);
  });
});
