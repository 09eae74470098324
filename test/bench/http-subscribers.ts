import { type ClientRequest, type IncomingMessage, request } from 'node:http';

import type { OperationMessage } from '../support/websocket.js';

/** One subscription over an HTTP transport, read as it arrives: the bench's own lean reader, for thousands at once. */
export interface HttpSubscriber {
  /** The next answer and when it arrived (performance.now()). */
  nextTimed(timeoutMs?: number): Promise<{ message: OperationMessage; receivedAt: number }>;
  next(timeoutMs?: number): Promise<OperationMessage>;
  close(): void;
}

type Transport = 'sse' | 'multipart';

/** Subscribers opened at once while opening thousands. */
const OPENING_IN_PARALLEL = 100;

/** `count` subscribers, each made by `open(index)`, `atOnce` at a time, in index order. */
export async function openInBatches<T>(count: number, open: (index: number) => Promise<T>, atOnce = OPENING_IN_PARALLEL): Promise<T[]> {
  const opened: T[] = [];
  for (let at = 0; at < count; at += atOnce) {
    opened.push(...(await Promise.all(Array.from({ length: Math.min(atOnce, count - at) }, (_, offset) => open(at + offset)))));
  }
  return opened;
}

/** Why subscriptions of this process could not be opened, for the bench to tell. */
export const failures: string[] = [];

/**
 * Subscribes over Server-Sent Events (graphql-sse, distinct connections) or Apollo's multipart
 * HTTP subscriptions, with an agent-less connection of its own, and splits what arrives into
 * answers: SSE `next` events, multipart parts other than heartbeats.
 */
export async function subscribeOverHttp(base: string, transport: Transport, authorization: string, query: string): Promise<HttpSubscriber> {
  const queue: { message: OperationMessage; receivedAt: number }[] = [];
  let waiting: (() => void) | undefined;
  let buffer = '';
  const outgoing: ClientRequest = request(`${base}${transport === 'sse' ? '/graphql/stream' : '/graphql'}`, {
    method: 'POST',
    agent: false,
    headers: {
      authorization,
      'content-type': 'application/json',
      accept: transport === 'sse' ? 'text/event-stream' : 'multipart/mixed;boundary="graphql";subscriptionSpec="1.0"',
    },
  });
  // Answered (its head), or failed: the caller opens connections a batch at a time.
  const answered = new Promise<void>((resolve) => {
    outgoing.once('response', () => resolve());
    outgoing.once('error', () => resolve());
  });
  outgoing.on('error', (error) => failures.push(error.message));
  outgoing.on('response', (response: IncomingMessage) => {
    if (response.statusCode !== 200) failures.push(`HTTP ${response.statusCode}`);
    response.setEncoding('utf8');
    response.on('error', () => {});
    response.on('data', (chunk: string) => {
      buffer += chunk;
      const [pieces, rest] = transport === 'sse' ? sseEvents(buffer) : multipartParts(buffer);
      buffer = rest;
      const receivedAt = performance.now();
      for (const payload of pieces) queue.push({ message: { type: 'next', payload }, receivedAt });
      if (pieces.length > 0) waiting?.();
    });
  });
  outgoing.end(JSON.stringify({ query }));
  const nextTimed = async (timeoutMs = 5_000) => {
    const deadline = Date.now() + timeoutMs;
    while (queue.length === 0) {
      if (Date.now() > deadline) throw new Error(`no ${transport} answer within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        waiting = resolve;
        setTimeout(resolve, 100);
      });
    }
    return queue.shift()!;
  };
  await answered;
  return { nextTimed, next: async (timeoutMs) => (await nextTimed(timeoutMs)).message, close: () => outgoing.destroy() };
}

/** The `next` events' data in `text`, and what is left of an event not yet whole. */
function sseEvents(text: string): [unknown[], string] {
  const events = text.split('\n\n');
  const rest = events.pop()!;
  const data = events.flatMap((event) => {
    const lines = event.split('\n');
    if (!lines.includes('event: next')) return [];
    return [
      JSON.parse(
        lines
          .filter((line) => line.startsWith('data: '))
          .map((line) => line.slice(6))
          .join('\n'),
      ) as unknown,
    ];
  });
  return [data, rest];
}

/** The payloads of the parts in `text` (heartbeats left out), and what is left of a part not yet whole. */
function multipartParts(text: string): [unknown[], string] {
  const parts = text.split('\r\n--graphql');
  const rest = parts.pop()!;
  const payloads = parts.flatMap((part) => {
    const body = part.slice(part.indexOf('\r\n\r\n') + 4);
    if (!part.includes('\r\n\r\n') || body === '{}') return [];
    return [(JSON.parse(body) as { payload: unknown }).payload];
  });
  return [payloads, rest];
}
