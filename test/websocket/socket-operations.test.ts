import type { FormattedExecutionResult } from 'graphql';
import { GraphQLError } from 'graphql';
import { describe, expect, it } from 'vitest';

import { ErrorFormat } from '../../src/operations/format.js';
import { type LiveResults, SubscriptionFailure } from '../../src/operations/subscriptions.js';
import { SocketOperations } from '../../src/websocket/socket-operations.js';

/** A subscription's results that count how often they were ended. */
function results(): LiveResults & { ended: number } {
  const done = async (): Promise<IteratorResult<FormattedExecutionResult>> => {
    stream.ended += 1;
    return { value: undefined, done: true };
  };
  const stream = {
    ended: 0,
    next: async () => ({ value: undefined, done: true }) as IteratorResult<FormattedExecutionResult>,
    return: done,
    throw: done,
    [Symbol.asyncIterator]() {
      return this;
    },
  };
  return stream;
}

describe("a socket's operations", () => {
  it('keep an id for one operation until it ends, known by its payload, whatever reuses the id later', () => {
    const operations = new SocketOperations();
    const [first, second] = [{}, {}];
    const operation = operations.begin('a', first, 'request-1')!;
    expect(operations.begin('a', second, 'request-2')).toBeUndefined();
    expect(operations.of(first)).toBe(operation);
    operation.end();
    const again = operations.begin('a', second, 'request-2')!;
    expect(operations.of(second)).toBe(again);
    expect(operations.of(first)).toBe(operation);
  });

  it('keep each id to its operation while several run at once, and after all but one have ended', () => {
    const operations = new SocketOperations();
    const a = operations.begin('a', {}, 'request-a')!;
    const b = operations.begin('b', {}, 'request-b')!;
    const c = operations.begin('c', {}, 'request-c')!;
    expect(['a', 'b', 'c'].map((id) => operations.begin(id, {}, 'again'))).toEqual([undefined, undefined, undefined]);
    a.end();
    c.end();
    expect(operations.begin('b', {}, 'again')).toBeUndefined();
    const reused = operations.begin('a', {}, 'request-a2')!;
    expect(reused.requestId).toBe('request-a2');
    operations.endAll();
    expect([b.hasEnded, reused.hasEnded]).toEqual([true, true]);
    expect(operations.begin('b', {}, 'request-b2')).toBeDefined();
  });

  it('end the results of an operation that ended before they came, at once', () => {
    const operations = new SocketOperations();
    const operation = operations.begin('a', {}, 'request')!;
    operation.end();
    const late = results();
    expect(operation.run(late)).toBe(false);
    expect(late.ended).toBe(1);
  });

  it('end every operation when the socket closes, each once, whatever its stage', () => {
    const operations = new SocketOperations();
    const running = operations.begin('a', {}, 'a')!;
    const stream = results();
    running.run(stream);
    const checking = operations.begin('b', {}, 'b')!;
    operations.endAll();
    operations.endAll();
    running.end();
    expect(stream.ended).toBe(1);
    expect([running.hasEnded, checking.hasEnded]).toEqual([true, true]);
    expect(operations.begin('a', {}, 'c')).toBeDefined();
  });

  it('answer errors with its refusal, its failure, or its own errors formatted with its request id', () => {
    const format = new ErrorFormat(false);
    const operations = new SocketOperations();
    const refused = operations.begin('a', {}, 'r')!;
    refused.refuse([{ message: 'too many requests', extensions: { code: 'RATE_LIMITED' } }]);
    expect(refused.errorsToSend([new GraphQLError('placeholder')], format)).toEqual([
      { message: 'too many requests', extensions: { code: 'RATE_LIMITED' } },
    ]);
    const failing = operations.begin('b', {}, 'f')!;
    const failure = new SubscriptionFailure([{ message: 'events were lost', extensions: { code: 'EVENTS_LOST' } }]);
    expect(failing.errorsToSend([new GraphQLError('wrapped', { originalError: failure })], format)).toEqual(failure.errors);
    const other = operations.begin('c', {}, 'request-c')!;
    expect(other.errorsToSend([new GraphQLError('boom')], format)).toEqual([
      { message: 'boom', extensions: { code: 'INTERNAL_SERVER_ERROR', requestId: 'request-c' } },
    ]);
  });
});
