import type { AddressInfo } from 'node:net';

import { afterEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';

import { systemClock } from '../../src/clock.js';
import { type BoundedWebSocket, boundedWebSocketClass } from '../../src/websocket/bounded-websocket.js';

const LIMITS = { maxBufferedBytes: 1024 * 1024, messagesPerSecond: 0 };

let server: WebSocketServer | undefined;
afterEach(async () => {
  for (const client of server?.clients ?? []) client.terminate();
  await new Promise((resolve) => server?.close(resolve));
  server = undefined;
});

/** A server socket of the gateway's class, and its client; `autoPong: false` makes a client that never answers pings. */
async function connected(autoPong: boolean): Promise<{ serverSide: BoundedWebSocket; client: WebSocket; closed: Promise<number> }> {
  const listening = new WebSocketServer({ host: '127.0.0.1', port: 0, WebSocket: boundedWebSocketClass(LIMITS, systemClock) });
  server = listening;
  await new Promise((resolve) => listening.once('listening', resolve));
  const accepted = new Promise<BoundedWebSocket>((resolve) => listening.once('connection', resolve));
  const client = new WebSocket(`ws://127.0.0.1:${(listening.address() as AddressInfo).port}`, { autoPong });
  const closed = new Promise<number>((resolve) => client.once('close', resolve));
  await new Promise((resolve) => client.once('open', resolve));
  return { serverSide: await accepted, client, closed };
}

/** One keep-alive beat, and the ping it sends reaching the client (and, when it answers, its pong reaching the server). */
async function beat(serverSide: BoundedWebSocket, client: WebSocket, answered: boolean): Promise<void> {
  const pinged = new Promise((resolve) => client.once('ping', resolve));
  const ponged = new Promise((resolve) => serverSide.once('pong', resolve));
  serverSide.keepAlive();
  await pinged;
  if (answered) await ponged;
}

describe('the keep-alive beat', () => {
  it('keeps a socket that answers each ping before the next beat', async () => {
    const { serverSide, client } = await connected(true);
    for (let index = 0; index < 3; index += 1) await beat(serverSide, client, true);
    expect(serverSide.readyState).toBe(WebSocket.OPEN);
    expect(client.readyState).toBe(WebSocket.OPEN);
  });

  it('drops a socket that did not answer the last ping, at the next beat, without a closing handshake', async () => {
    const { serverSide, client, closed } = await connected(false);
    await beat(serverSide, client, false);
    expect(serverSide.readyState).toBe(WebSocket.OPEN);
    serverSide.keepAlive();
    // 1006: the connection ended without a close frame.
    expect(await closed).toBe(1006);
  });
});
