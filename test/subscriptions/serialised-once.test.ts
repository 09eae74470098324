import { randomUUID } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { connectAs, type TestSocket } from '../support/websocket.js';
import { subscriptionsRunning } from './helpers.js';

const EVENTS = 'subscription Events { conversationEvents { kind number conversation { name } } }';

let gateway: TestGateway;
let alice: string;
const sockets: TestSocket[] = [];
const streams: AbortController[] = [];

beforeAll(async () => {
  gateway = await startTestGateway();
  await gateway.seed({
    users: [{ id: 1, username: 'alice', quota: 10 }],
    conversations: [{ userId: 1, id: 1, name: 'Trip plan', model: 'gpt-4o', enableWeb: false, messages: [] }],
  });
  alice = `Bearer ${await gateway.token(1)}`;
});
afterAll(async () => {
  for (const stream of streams) stream.abort();
  for (const socket of sockets) await socket.close();
  await gateway?.stop();
});

/** Everything an HTTP stream's body has brought so far, as text. */
class StreamText {
  text = '';

  static async of(response: Promise<Response>): Promise<StreamText> {
    const answer = await response;
    expect(answer.status).toBe(200);
    const received = new StreamText();
    const decoder = new TextDecoder();
    void (async () => {
      for await (const chunk of answer.body!) received.text += decoder.decode(chunk as Uint8Array, { stream: true });
    })().catch(() => {});
    return received;
  }
}

function openStream(path: string, init: RequestInit): Promise<StreamText> {
  const abort = new AbortController();
  streams.push(abort);
  return StreamText.of(fetch(`${gateway.url}${path}`, { ...init, signal: abort.signal }));
}

const json = { 'content-type': 'application/json' };

/** A WebSocket with `count` subscriptions, and every text frame it receives, as it came. */
async function websocketSubscriptions(count: number): Promise<{ ids: string[]; frames: string[] }> {
  const socket = await connectAs(gateway.url, alice);
  sockets.push(socket);
  const frames: string[] = [];
  socket.socket.on('message', (data) => frames.push(String(data)));
  const ids = Array.from({ length: count }, () => socket.subscribe(EVENTS).id);
  return { ids, frames };
}

/** A single-connection SSE stream (reserved, connected) with `count` operations added to it, under ids of their own. */
async function singleConnectionStream(count: number): Promise<{ ids: string[]; stream: StreamText }> {
  const reserved = await fetch(`${gateway.url}/graphql/stream`, { method: 'PUT', headers: { authorization: alice } });
  const token = await reserved.text();
  const headers = { authorization: alice, 'x-graphql-event-stream-token': token };
  const stream = await openStream('/graphql/stream', { headers: { ...headers, accept: 'text/event-stream' } });
  const ids = Array.from({ length: count }, () => randomUUID());
  for (const id of ids) {
    const added = await fetch(`${gateway.url}/graphql/stream`, {
      method: 'POST',
      headers: { ...headers, ...json },
      body: JSON.stringify({ query: EVENTS, extensions: { operationId: id } }),
    });
    expect(added.status).toBe(202);
  }
  return { ids, stream };
}

describe('an event its subscribers share, over every transport', () => {
  it('is serialised once for all of them, and each frame is byte for byte what its protocol writes', async () => {
    const before = await subscriptionsRunning(gateway.url);
    const websockets = [await websocketSubscriptions(2), await websocketSubscriptions(1)];
    const distinct = await Promise.all(
      [1, 2].map(() =>
        openStream('/graphql/stream', {
          method: 'POST',
          headers: { authorization: alice, accept: 'text/event-stream', ...json },
          body: JSON.stringify({ query: EVENTS }),
        }),
      ),
    );
    const single = await singleConnectionStream(2);
    const multipart = await Promise.all(
      [1, 2].map(() =>
        openStream('/graphql', {
          method: 'POST',
          headers: { authorization: alice, accept: 'multipart/mixed;subscriptionSpec="1.0", application/json', ...json },
          body: JSON.stringify({ query: EVENTS }),
        }),
      ),
    );
    const subscribers = 3 + 2 + 2 + 2;
    await expect.poll(() => subscriptionsRunning(gateway.url), { timeout: 5_000, interval: 20 }).toBe(before + subscribers);

    const name = `Renamed ${randomUUID()}`;
    const answer = { data: { conversationEvents: { kind: 'UPDATED', number: 1, conversation: { name } } } };
    const answerJson = JSON.stringify(answer);
    const stringify = vi.spyOn(JSON, 'stringify');
    let serialisations: number;
    try {
      await gateway.models.conversations.updateOne({ userId: 1, id: 1 }, { $set: { name } });
      const arrived = () =>
        websockets.every(({ ids, frames }) => frames.filter((frame) => frame.includes(name)).length === ids.length) &&
        [...distinct, ...multipart].every((stream) => stream.text.includes(name)) &&
        single.stream.text.split(name).length === single.ids.length + 1;
      await expect.poll(arrived, { timeout: 5_000, interval: 20 }).toBe(true);
      // Every text made of the answer, by whichever code made it (the gateway's or its protocol libraries').
      serialisations = stringify.mock.results.filter(
        (result) => result.type === 'return' && typeof result.value === 'string' && result.value.includes(name),
      ).length;
    } finally {
      stringify.mockRestore();
    }
    expect(serialisations).toBe(1);

    for (const { ids, frames } of websockets) {
      expect(frames.filter((frame) => frame.includes(name))).toEqual(
        ids.map((id) => JSON.stringify({ id, type: 'next', payload: answer })),
      );
    }
    for (const stream of distinct) expect(stream.text).toContain(`event: next\ndata: ${answerJson}\n\n`);
    for (const id of single.ids) expect(single.stream.text).toContain(`event: next\ndata: ${JSON.stringify({ id, payload: answer })}\n\n`);
    for (const stream of multipart) {
      expect(stream.text).toContain(
        `\r\n--graphql\r\ncontent-type: application/json; charset=utf-8\r\n\r\n{"payload":${answerJson}}\r\n--graphql`,
      );
    }
  });
});
