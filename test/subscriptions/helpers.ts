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
