import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { rateLimited } from '../../src/errors.js';
import type { OperationHook } from '../../src/operations/hooks.js';
import { type DoorOperations, throughEveryDoor as throughEachDoor } from '../support/every-door.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';

/**
 * One hook list for every door: a hook registered once (`ServiceOptions.operationHooks`) is told
 * of each operation that comes through `/graphql` (single and batched), the REST table, a
 * WebSocket, Server-Sent Events and multipart HTTP, with the door named, and of what it answered;
 * and a hook that throws refuses the operation at each door, in that door's words.
 */
const REFUSED_USER = 2;
const operations: string[] = [];
const results: string[] = [];
const hook: OperationHook = {
  onOperation({ door, caller, operation, requestId }) {
    expect(requestId).toEqual(expect.any(String));
    operations.push(`${door} ${caller.userId} ${operation.operation} ${operation.name?.value ?? 'anonymous'}`);
    if (caller.userId === REFUSED_USER) throw rateLimited(42);
  },
  onResult({ door }, result) {
    results.push(`${door} ${JSON.stringify(result.data)}${result.errors ? ' errors' : ''}`);
  },
};

let gateway: TestGateway;

beforeAll(async () => {
  gateway = await startTestGateway({}, { operationHooks: [hook] });
  await gateway.seed({
    users: [
      { id: 1, username: 'alice', quota: 1 },
      { id: REFUSED_USER, username: 'bob', quota: 2 },
    ],
  });
});
afterAll(() => gateway?.stop());

const NAMED_OPERATIONS: DoorOperations = {
  graphql: 'query Quota { quota }',
  websocket: 'subscription OverWebSocket { quota }',
  sse: 'subscription OverSse { quota }',
  multipart: 'subscription OverMultipart { quota }',
};

/** One operation of `userId` through each door, each named for its door; what each answered. */
async function throughEveryDoor(userId: number): Promise<Record<string, unknown>> {
  return throughEachDoor(gateway, `Bearer ${await gateway.token(userId)}`, NAMED_OPERATIONS, firstPayload);
}

/** A multipart subscription's first payload: `next` for data, else its first error's code (a refusal is a part of the stream). */
async function firstPayload(response: Response): Promise<string> {
  expect(response.status).toBe(200);
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let line: RegExpMatchArray | null;
  while ((line = /^\{"payload".*$/m.exec(text)) === null || !text.slice(line.index!).includes('\n')) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  await reader.cancel();
  const part = JSON.parse(line![0].trim()) as {
    payload: { data?: unknown; errors?: { extensions: { code: string } }[] };
  };
  return part.payload.errors ? part.payload.errors[0]!.extensions.code : 'next';
}

describe('a hook registered once', () => {
  it('is told of an operation from every door, with the door named, and of its result', async () => {
    operations.length = 0;
    results.length = 0;
    expect(await throughEveryDoor(1)).toEqual({ graphql: 200, rest: 200, websocket: 'next', sse: 'next', multipart: 'next' });
    expect(operations).toEqual([
      'graphql 1 query Quota',
      'rest 1 query Quota',
      'websocket 1 subscription OverWebSocket',
      'sse 1 subscription OverSse',
      'multipart 1 subscription OverMultipart',
    ]);
    // Told before the door writes the answer: every door's first result is there.
    expect(results.slice(0, 4)).toEqual(['graphql {"quota":1}', 'rest {"quota":1}', 'websocket {"quota":1}', 'sse {"quota":1}']);
    await expect.poll(() => results[4]).toBe('multipart {"quota":1}');
  });

  it('is told of each operation of a batched /graphql request', async () => {
    operations.length = 0;
    const response = await fetch(`${gateway.url}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await gateway.token(1)}`, 'content-type': 'application/json' },
      body: JSON.stringify([{ query: 'query First { quota }' }, { query: 'query Second { quota }' }]),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual([{ data: { quota: 1 } }, { data: { quota: 1 } }]);
    expect(operations).toEqual(['graphql 1 query First', 'graphql 1 query Second']);
  });

  it('refuses the operation at every door when it throws, in each door’s words, before it runs', async () => {
    operations.length = 0;
    results.length = 0;
    expect(await throughEveryDoor(REFUSED_USER)).toEqual({
      graphql: 429,
      rest: 429,
      websocket: 'RATE_LIMITED',
      sse: 'RATE_LIMITED',
      multipart: 'RATE_LIMITED',
    });
    expect(operations.map((seen) => seen.split(' ')[0])).toEqual(['graphql', 'rest', 'websocket', 'sse', 'multipart']);
    expect(results).toEqual([]);
  });
});
