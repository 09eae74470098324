import type { Socket } from 'node:net';
import { setImmediate as nextTurn } from 'node:timers/promises';

import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, type MockInstance, vi } from 'vitest';
import WebSocket from 'ws';

import { WEBSOCKET_MESSAGE_ASSEMBLY } from '../../src/limits.js';
import { captureLog } from '../support/captured-log.js';
import { ManualClock } from '../support/clock.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { readiness } from './helpers.js';

const SEED = { users: [{ id: 1, username: 'alice', quota: 12.5 }] };
/** A graphql-ws ping with a payload of 90 kB, which graphql-ws echoes in its pong. */
const BIG_PING = JSON.stringify({ type: 'ping', payload: { filler: 'x'.repeat(90_000) } });
const PING = JSON.stringify({ type: 'ping' });
/** What the attacking client lets its own library hold before it waits: it sends as fast as the server reads. */
const CLIENT_BACKLOG_BYTES = 4 * 1024 * 1024;

interface Closed {
  code: number;
  reason: string;
}

interface Opened {
  socket: WebSocket;
  closed: Promise<Closed>;
}

/** A raw graphql-transport-ws socket; with a token, authenticated (it waits for the ack). */
async function open(gateway: TestGateway, token?: string): Promise<Opened> {
  const socket = new WebSocket(`${gateway.url.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
  socket.on('error', () => {});
  const closed = new Promise<Closed>((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  await new Promise((resolve) => socket.once('open', resolve));
  if (token !== undefined) {
    const acknowledged = nextMessage(socket);
    socket.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: `Bearer ${token}` } }));
    expect(await acknowledged).toEqual({ type: 'connection_ack' });
  }
  return { socket, closed };
}

const nextMessage = (socket: WebSocket) =>
  new Promise<unknown>((resolve) => socket.once('message', (data) => resolve(JSON.parse(data.toString()))));

/** Sends `message` until the socket closes or `maxBytes` are sent, reading nothing; answers how much it sent. */
async function floodUnread(socket: WebSocket, message: string, maxBytes: number): Promise<number> {
  socket.pause();
  let sent = 0;
  while (socket.readyState === WebSocket.OPEN && sent < maxBytes) {
    if (socket.bufferedAmount > CLIENT_BACKLOG_BYTES) await new Promise((resolve) => setTimeout(resolve, 1));
    else {
      socket.send(message);
      sent += message.length;
      if (sent % (32 * message.length) === 0) await new Promise(setImmediate);
    }
  }
  return sent;
}

describe('a socket that does not read what it is sent', () => {
  const log = captureLog();
  let gateway: TestGateway;
  let consoleError: MockInstance;

  beforeAll(async () => {
    gateway = await startTestGateway({ WEBSOCKET_MAX_BUFFERED_BYTES: String(256 * 1024) }, { logger: log.logger });
    await gateway.seed(SEED);
  });
  afterAll(() => gateway?.stop());
  beforeEach(() => {
    consoleError = vi.spyOn(console, 'error');
  });
  afterEach(() => consoleError.mockRestore());

  it.each([
    ['before connection_init', false],
    ['after connection_init', true],
  ])(
    'is dropped once the server holds more than WEBSOCKET_MAX_BUFFERED_BYTES for it (%s), and its end is logged once',
    async (_when, authenticated) => {
      const { socket, closed } = await open(gateway, authenticated ? await gateway.token(1) : undefined);
      const logged = log.lines().length;
      // Far more than the kernel's buffers on both ends take: past them, the server holds the echoes.
      const sent = await floodUnread(socket, BIG_PING, 256 * 1024 * 1024);
      expect(sent).toBeLessThan(256 * 1024 * 1024);
      // Dropped, not closed: a client that does not read would not read a close frame either.
      expect((await closed).code).toBe(1006);
      await expect.poll(async () => (await readiness(gateway.url)).websockets).toBe(0);
      expect(log.lines().slice(logged)).toEqual([
        expect.objectContaining({ msg: 'WebSocket ended by the server: unread data', endedFor: 'unread data', code: 1006 }),
      ]);
      expect(consoleError).not.toHaveBeenCalled();
    },
  );

  it('ends without a line for each message it left unanswered when the client resets it', async () => {
    // Unread pongs the server holds (under the bound) when the connection is reset under them.
    const { socket, closed } = await open(gateway, await gateway.token(1));
    await floodUnread(socket, BIG_PING, 2 * 1024 * 1024);
    socket.terminate();
    await closed;
    await expect.poll(async () => (await readiness(gateway.url)).websockets).toBe(0);
    expect(consoleError).not.toHaveBeenCalled();
    expect(log.lines().filter((line) => (line.level as number) >= 40)).toEqual([]);
  });
});

describe("a socket's message rate", () => {
  const clock = new ManualClock();
  let gateway: TestGateway;

  beforeAll(async () => {
    // One a second, and ten at once: the rate limit's burst window is 10 s.
    gateway = await startTestGateway({ RATE_LIMIT: '1' }, { clock });
    await gateway.seed(SEED);
  });
  afterAll(() => gateway?.stop());

  /** Sends a graphql-ws ping and waits for its pong, or a WebSocket ping and waits for its pong frame. */
  async function ping(socket: WebSocket, kind: 'message' | 'frame'): Promise<void> {
    if (kind === 'frame') {
      const pong = new Promise((resolve) => socket.once('pong', resolve));
      socket.ping();
      await pong;
    } else {
      const pong = nextMessage(socket);
      socket.send(PING);
      expect(await pong).toEqual({ type: 'pong' });
    }
  }

  it('counts pings, graphql-ws and WebSocket alike, before connection_init too, and closes the socket past it with 1008', async () => {
    const { socket, closed } = await open(gateway);
    for (let index = 0; index < 10; index += 1) await ping(socket, index % 2 === 0 ? 'message' : 'frame');
    socket.send(PING);
    expect(await closed).toEqual({ code: 1008, reason: 'too many messages: at most 1 a second' });
  });

  it('counts every message after connection_init, and allows one more each second', async () => {
    // connection_init is the first of the ten.
    const { socket, closed } = await open(gateway, await gateway.token(1));
    for (let index = 0; index < 9; index += 1) await ping(socket, 'message');
    await clock.advance(1_000);
    await ping(socket, 'message');
    socket.send(JSON.stringify({ type: 'pong' }));
    expect(await closed).toEqual({ code: 1008, reason: 'too many messages: at most 1 a second' });
  });
});

describe('a message still being assembled', () => {
  let gateway: TestGateway;

  beforeAll(async () => {
    gateway = await startTestGateway();
    await gateway.seed(SEED);
  });
  afterAll(() => gateway?.stop());

  const whenOpened = [
    ['before connection_init', false],
    ['after connection_init', true],
  ] as const;
  const openAt = async (authenticated: boolean) => open(gateway, authenticated ? await gateway.token(1) : undefined);

  /**
   * Sends `count` one-byte fragments of a text message, never its last, then a WebSocket ping
   * (which may come between fragments): answers its pong, or how the socket closed before it.
   */
  async function fragmentsThenPing({ socket, closed }: Opened, count: number): Promise<'pong' | Closed> {
    for (let index = 0; index < count; index += 1) socket.send('{', { fin: false });
    const pong = new Promise<'pong'>((resolve) => socket.once('pong', () => resolve('pong')));
    socket.ping();
    return Promise.race([pong, closed]);
  }

  it.each(whenOpened)(
    `comes in at most ${WEBSOCKET_MESSAGE_ASSEMBLY.fragments} frames (%s): one more closes the socket with 1008`,
    async (_when, authenticated) => {
      const within = await openAt(authenticated);
      expect(await fragmentsThenPing(within, WEBSOCKET_MESSAGE_ASSEMBLY.fragments)).toBe('pong');
      within.socket.terminate();
      const over = await openAt(authenticated);
      expect(await fragmentsThenPing(over, WEBSOCKET_MESSAGE_ASSEMBLY.fragments + 1)).toEqual({ code: 1008, reason: '' });
    },
  );

  /**
   * Writes one frame of a graphql-ws ping on the socket's connection, its first `trickled` bytes
   * one per turn of the event loop (so that the server reads them apart), the rest at once:
   * answers the pong, or how the socket closed before it.
   */
  async function trickledPing({ socket, closed }: Opened, trickled: number): Promise<'pong' | Closed> {
    const frame = maskedTextFrame(JSON.stringify({ type: 'ping', payload: { filler: 'x'.repeat(1_000) } }));
    const connection = (socket as unknown as { _socket: Socket })._socket;
    for (let index = 0; index < trickled; index += 1) {
      connection.write(frame.subarray(index, index + 1));
      await nextTurn();
    }
    const pong = nextMessage(socket).then(() => 'pong' as const);
    connection.write(frame.subarray(trickled));
    return Promise.race([pong, closed]);
  }

  it.each(whenOpened)(
    'comes in a bounded number of reads (%s): a frame written a byte at a time is refused with 1008',
    async (_when, authenticated) => {
      const whole = await openAt(authenticated);
      expect(await trickledPing(whole, 0)).toBe('pong');
      whole.socket.terminate();
      // Written a byte a turn, the frame comes in about as many reads as it has bytes, however the kernel joins some.
      const trickled = await openAt(authenticated);
      expect(await trickledPing(trickled, 4 * WEBSOCKET_MESSAGE_ASSEMBLY.reads)).toEqual({ code: 1008, reason: '' });
    },
  );
});

/** A client's text frame, masked with a key of zeros (the payload goes as it is), in one piece. */
function maskedTextFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  const head = Buffer.alloc(8);
  head[0] = 0x81; // FIN, text
  head[1] = 0x80 | 126; // masked, a 16-bit length follows
  head.writeUInt16BE(payload.length, 2);
  return Buffer.concat([head, payload]);
}
