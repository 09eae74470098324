import { describe, expect, it } from 'vitest';

import { rateLimited } from '../../../src/errors.js';
import { type Admission, AdmissionChecks } from '../../../src/operations/admission.js';
import type { OperationHook } from '../../../src/operations/hooks.js';
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

describe('the pipeline’s hooks', () => {
  /** A hook recording what it is told, refusing operations named `Refused`. */
  function recordingHook() {
    const told: string[] = [];
    const hook: OperationHook = {
      onOperation: ({ door, caller, operation, variables }) => {
        told.push(`operation ${door} ${caller.userId} ${operation.name?.value ?? 'anonymous'} ${JSON.stringify(variables ?? {})}`);
        if (operation.name?.value === 'Refused') throw rateLimited(5);
      },
      onResult: ({ door }, result) => void told.push(`result ${door} ${JSON.stringify(result)}`),
    };
    return { told, hook };
  }

  it('are told each operation before it runs and its result after, in the order given', async () => {
    const first = recordingHook();
    const order: string[] = [];
    const { run } = running({
      hooks: [first.hook, { onOperation: () => void order.push('second told'), onResult: () => void order.push('second answered') }],
    });
    expect(await run('query Q($n: Int) { quota a: conversations(first: $n) { totalCount } }', { variables: { n: 1 } })).toEqual({
      data: { quota: 2, a: { totalCount: 1 } },
    });
    expect(first.told).toEqual(['operation rest 1 Q {"n":1}', 'result rest {"data":{"quota":2,"a":{"totalCount":1}}}']);
    expect(order).toEqual(['second told', 'second answered']);
  });

  it('refuse an operation by throwing: nothing runs, the refusal is the answer, later hooks are not told', async () => {
    const { told, hook } = recordingHook();
    const later: string[] = [];
    const { run, world, registry } = running({ hooks: [hook, { onOperation: () => void later.push('told') }] });
    expect(await run('query Refused { conversation(number: 1) { name } }')).toMatchObject({
      errors: [{ extensions: { code: 'RATE_LIMITED' } }],
    });
    expect(told).toEqual(['operation rest 1 Refused {}']);
    expect(later).toEqual([]);
    expect(world.conversations.reads).toEqual([]);
    expect(await metricValue(registry, 'graphql_errors_total', { code: 'RATE_LIMITED' })).toBe(1);
  });

  it('are not told of a document the document stage or the limits refuse', async () => {
    const { told, hook } = recordingHook();
    const { run } = running({ hooks: [hook] });
    await run('{ nope }');
    await run('{ quota ');
    expect(told).toEqual([]);
  });

  it('are told of a subscription once, and of each event it runs, with its door', async () => {
    const { told, hook } = recordingHook();
    const { pipeline, world } = running({ hooks: [hook] });
    const answer = await pipeline.subscribe(
      { query: 'subscription Balance { quota }' },
      { caller: { userId: 1 }, door: 'sse', requestId: 's' },
    );
    if ('refused' in answer) throw new Error('refused');
    const next = answer.next();
    await new Promise((resolve) => setImmediate(resolve));
    world.balanceEvents.push({ points: 3 });
    expect(await next).toEqual({ value: { data: { quota: 3 } }, done: false });
    await answer.return();
    expect(told).toEqual(['operation sse 1 Balance {}', 'result sse {"data":{"quota":3}}']);
  });

  it('refuse a subscription before its stream opens', async () => {
    const { told, hook } = recordingHook();
    const { pipeline, world } = running({ hooks: [hook] });
    const answer = await pipeline.subscribe(
      { query: 'subscription Refused { quota }' },
      { caller: { userId: 1 }, door: 'websocket', requestId: 's' },
    );
    expect(answer).toMatchObject({ refused: [{ extensions: { code: 'RATE_LIMITED' } }] });
    expect(world.balanceEvents.opened).toBe(0);
    expect(told).toEqual(['operation websocket 1 Refused {}']);
  });

  it('in production, refuse introspection to callers not listed, at any door', async () => {
    const { run } = running({ production: true, introspectionUsers: [7] });
    expect(await run('{ __schema { queryType { name } } }')).toMatchObject({
      errors: [{ extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } }],
    });
    expect(await run('{ __schema { queryType { name } } }', { userId: 7 })).toEqual({
      data: { __schema: { queryType: { name: 'Query' } } },
    });
    expect(await run('{ __typename quota }')).toEqual({ data: { __typename: 'Query', quota: 2 } });
  });
});

describe('the execute stage', () => {
  it('answers variables that do not coerce as the client’s mistake (BAD_USER_INPUT), not as internal', async () => {
    const { run, lines } = running();
    const answer = await run('query Q($n: Int) { conversations(first: $n) { totalCount } }', { variables: { n: 'many' } });
    expect(answer.data).toBeUndefined();
    expect(answer.errors).toMatchObject([
      { message: expect.stringMatching(/^Variable "\$n" got invalid value "many"/), extensions: { code: 'BAD_USER_INPUT' } },
    ]);
    expect(lines.filter((line) => line.msg === 'unexpected error in a GraphQL operation')).toEqual([]);
  });
});
