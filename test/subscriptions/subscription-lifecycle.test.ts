import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';

import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { connectAs } from '../support/websocket.js';
import { readiness } from './helpers.js';

const CAP = 3;
/** A user for each run, so that what one run leaves behind (its caller's count) cannot fail another. */
const USERS = 400;
const SEED = {
  users: Array.from({ length: USERS }, (_, index) => ({ id: index + 1, username: `user${index + 1}`, quota: 12.5 })),
  conversations: Array.from({ length: USERS }, (_, index) => ({
    userId: index + 1,
    id: 1,
    name: 'Trip plan',
    model: 'gpt-4o',
    enableWeb: false,
    messages: [],
  })),
};
/** What each id subscribes to: both feeds, and an event that reads the database when it is sent. */
const DOCUMENTS: Record<string, string> = {
  a: 'subscription { quota }',
  b: 'subscription { conversationEvents { kind conversation { name } } }',
  c: 'subscription { conversationEvents { kind conversation { name } } }',
};
/** Commands of the change streams themselves, which run on their own schedule. */
const FEED_COMMANDS = new Set(['aggregate', 'getMore', 'killCursors']);

type Message = { type: 'subscribe'; id: string } | { type: 'complete'; id: string };

/** A socket speaking graphql-transport-ws message by message, authenticated. */
async function openProtocolSocket(
  gateway: TestGateway,
  userId: number,
): Promise<{ socket: WebSocket; closed: Promise<number>; received: { id?: string }[] }> {
  const socket = new WebSocket(`${gateway.url.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
  socket.on('error', () => {});
  const closed = new Promise<number>((resolve) => socket.once('close', resolve));
  const received: { id?: string; type?: string }[] = [];
  socket.on('message', (data) => received.push(JSON.parse(data.toString()) as { id?: string }));
  await new Promise((resolve) => socket.once('open', resolve));
  socket.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: `Bearer ${await gateway.token(userId)}` } }));
  await expect.poll(() => received.some((message) => message.type === 'connection_ack')).toBe(true);
  return { socket, closed, received };
}

/** Sends `messages` as frames in one turn of the event loop: the server reads them in one go. */
function write(socket: WebSocket, messages: Message[]): void {
  for (const message of messages) {
    const text =
      message.type === 'subscribe'
        ? { id: message.id, type: 'subscribe', payload: { query: DOCUMENTS[message.id] } }
        : { id: message.id, type: 'complete' };
    socket.send(JSON.stringify(text));
  }
}

type Counts = { websockets: number; subscriptions: number };

/** What /readyz counts now: open sockets and running subscriptions. */
async function counts(gateway: TestGateway): Promise<Counts> {
  const { websockets, subscriptions } = await readiness(gateway.url);
  return { websockets, subscriptions };
}

/** Waits until the gateway counts no more sockets and subscriptions than `before` (none, unless told). */
async function expectNothingLeft(gateway: TestGateway, before: Counts = { websockets: 0, subscriptions: 0 }): Promise<void> {
  await expect.poll(() => counts(gateway), { timeout: 5_000 }).toEqual(before);
}

/** A fresh socket runs as many subscriptions as the cap allows, and not one more. */
async function expectWholeCap(gateway: TestGateway, userId: number, before?: Counts): Promise<void> {
  const socket = await connectAs(gateway.url, `Bearer ${await gateway.token(userId)}`);
  for (let index = 0; index < CAP; index += 1) expect((await socket.subscribe('subscription { quota }').next()).type).toBe('next');
  const refused = await socket.subscribe('subscription { quota }').next();
  expect(refused.payload[0].extensions.code).toBe('TOO_MANY_SUBSCRIPTIONS');
  await socket.close();
  await expectNothingLeft(gateway, before);
}

/**
 * A rename, seen by one subscriber of its owner's conversation events, costs the commands of that
 * one subscriber: a subscription left running by an earlier socket would read the conversation too.
 */
async function expectOneSubscriberPerRename(
  gateway: TestGateway,
  userId: number,
  before: Counts = { websockets: 0, subscriptions: 0 },
): Promise<void> {
  const authorization = `Bearer ${await gateway.token(userId)}`;
  const socket = await connectAs(gateway.url, authorization);
  const events = socket.subscribe(DOCUMENTS.b!);
  // Its stream runs (as /readyz counts it): no later write can be missed.
  await expect
    .poll(() => counts(gateway), { timeout: 5_000 })
    .toEqual({ websockets: before.websockets + 1, subscriptions: before.subscriptions + 1 });
  const name = `Renamed ${Math.random()}`;
  const commands = await gateway.commandsDuring(async () => {
    const renamed = await fetch(`${gateway.url}/conversation/rename`, {
      method: 'POST',
      headers: { authorization },
      body: JSON.stringify({ id: 1, name }),
    });
    expect(await renamed.json()).toEqual({ status: true, message: '' });
    expect((await events.next()).payload).toEqual({ data: { conversationEvents: { kind: 'UPDATED', conversation: { name } } } });
  });
  expect(commands.filter((command) => !FEED_COMMANDS.has(command))).toEqual(['findAndModify', 'find']);
  await socket.close();
  await expectNothingLeft(gateway, before);
}

describe('subscriptions end with their socket, whatever the order of subscribe and complete', () => {
  // A gateway for each test: what one leaves behind must not be blamed on the other.
  let gateway: TestGateway;

  beforeEach(async () => {
    gateway = await startTestGateway({ SUBSCRIPTIONS_PER_CALLER: String(CAP) });
    await gateway.seed(SEED);
  });
  afterEach(() => gateway?.stop());

  it('uncounts every one after subscribe, complete and subscribe of one id in one write, then complete', async () => {
    for (let round = 0; round < 25; round += 1) {
      const { socket, closed, received } = await openProtocolSocket(gateway, 1);
      write(socket, [
        { type: 'subscribe', id: 'a' },
        { type: 'complete', id: 'a' },
        { type: 'subscribe', id: 'a' },
      ]);
      // Answered, or closed: a subscribe reusing an id the server is still starting is a duplicate id.
      await Promise.race([expect.poll(() => received.some((message) => message.id === 'a')).toBe(true), closed]);
      write(socket, [{ type: 'complete', id: 'a' }]);
      socket.close();
      await closed;
    }
    await expectNothingLeft(gateway);
    await expectWholeCap(gateway, 1);
    await expectOneSubscriberPerRename(gateway, 1);
  });

  it('uncounts every one, ends its change-feed listener and frees the cap, for any interleaving of subscribe, complete and close', async () => {
    const message = fc.record({ type: fc.constantFrom('subscribe' as const, 'complete' as const), id: fc.constantFrom('a', 'b', 'c') });
    const program = fc.record({
      // Each inner list is one write; between two, the server gets 0 to 2 turns of the event loop to itself.
      writes: fc.array(fc.tuple(fc.array(message, { minLength: 1, maxLength: 4 }), fc.nat(2)), { minLength: 1, maxLength: 5 }),
      ending: fc.constantFrom('close', 'terminate'),
    });
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(program, async ({ writes, ending }) => {
        const userId = (runs++ % USERS) + 1;
        const before = await counts(gateway);
        const { socket, closed } = await openProtocolSocket(gateway, userId);
        for (const [messages, turns] of writes) {
          write(socket, messages);
          for (let turn = 0; turn < turns; turn += 1) await new Promise(setImmediate);
        }
        if (ending === 'close') socket.close();
        else socket.terminate();
        await closed;
        await expectNothingLeft(gateway, before);
        await expectWholeCap(gateway, userId, before);
        await expectOneSubscriberPerRename(gateway, userId, before);
      }),
      { numRuns: 60, seed: 20_240_611 },
    );
  }, 120_000);
});
