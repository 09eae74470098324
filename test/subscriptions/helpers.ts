import { ApolloClient, gql, HttpLink, InMemoryCache } from '@apollo/client';
import type { ExecutionResult } from 'graphql-sse';
import { expect } from 'vitest';

import { connectAs, type Operation, type OperationMessage, type TestSocket } from '../support/websocket.js';

/** What the gateway at `url` reports in /readyz: open WebSockets, and subscriptions whose event streams run. */
export async function readiness(url: string): Promise<{ status: string; websockets: number; subscriptions: number }> {
  return (await (await fetch(`${url}/readyz`)).json()) as { status: string; websockets: number; subscriptions: number };
}

/** The subscriptions whose event streams run on the gateway at `url`, as its /readyz reports them. */
export async function subscriptionsRunning(url: string): Promise<number> {
  return (await readiness(url)).subscriptions;
}

/**
 * A socket of its own on the gateway at `url`, authenticated with `authorization`, with one
 * subscription whose stream runs (counted by /readyz), so that no later write can be missed.
 */
export async function runningSubscription(
  url: string,
  authorization: string,
  query: string,
  variables?: Record<string, unknown>,
): Promise<{ socket: TestSocket; operation: Operation }> {
  const socket = await connectAs(url, authorization);
  const before = await subscriptionsRunning(url);
  const operation = socket.subscribe(query, variables);
  await expect.poll(() => subscriptionsRunning(url), { timeout: 5_000, interval: 20 }).toBeGreaterThanOrEqual(before + 1);
  return { socket, operation };
}

/** The data of a `next` message, which must carry no errors. */
export function data(message: OperationMessage) {
  expect(message.type).toBe('next');
  expect(message.payload.errors).toBeUndefined();
  return message.payload.data;
}

/** What a subscription has received so far, and whether (and how) it ended. */
export class Received<T = Record<string, unknown>> {
  readonly results: ExecutionResult<T, unknown>[] = [];
  ended: 'complete' | { error: unknown } | undefined;
  private waiters: (() => void)[] = [];

  readonly sink = {
    next: (result: ExecutionResult<T, unknown>) => this.push(() => this.results.push(result)),
    error: (error: unknown) => this.push(() => (this.ended = { error })),
    complete: () => this.push(() => (this.ended = 'complete')),
  };

  /** The first `count` results, once they arrived (fails after `timeoutMs`). */
  async first(count: number, timeoutMs = 5_000): Promise<ExecutionResult<T, unknown>[]> {
    await this.until(() => this.results.length >= count, timeoutMs, `${count} results`);
    return this.results.slice(0, count);
  }

  async end(timeoutMs = 5_000): Promise<Received<T>['ended']> {
    await this.until(() => this.ended !== undefined, timeoutMs, 'the end');
    return this.ended;
  }

  private push(change: () => void): void {
    change();
    for (const wake of this.waiters.splice(0)) wake();
  }

  private async until(done: () => boolean, timeoutMs: number, what: string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!done()) {
      if (Date.now() > deadline)
        throw new Error(`no ${what} within ${timeoutMs} ms: ${JSON.stringify(this.results)} ${String(this.ended)}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
  }
}

/**
 * Apollo Client 4 subscribing over multipart to the gateway at `url`, as an app would; `fetch`,
 * when given, is the one its link calls.
 */
export function apolloSubscription(
  url: string,
  authorization: string,
  query: string,
  fetch?: typeof globalThis.fetch,
): { received: Received; stop(): void } {
  const client = new ApolloClient({
    link: new HttpLink({ uri: `${url}/graphql`, headers: { authorization }, fetch }),
    cache: new InMemoryCache(),
  });
  const received = new Received();
  const subscription = client.subscribe({ query: gql(query) }).subscribe({
    next: (result) => received.sink.next(result as ExecutionResult<Record<string, unknown>, unknown>),
    error: received.sink.error,
    complete: received.sink.complete,
  });
  return { received, stop: () => subscription.unsubscribe() };
}
