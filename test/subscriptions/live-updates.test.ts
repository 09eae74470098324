import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';

import { graphql, startTestGateway, type TestGateway } from '../support/gateway.js';
import { connectAs, type Operation, type TestSocket } from '../support/websocket.js';
import { data, runningSubscription } from './helpers.js';

const EVENTS =
  'subscription Events { conversationEvents { kind conversationId number deletedConversationId conversation { id number name messages { role content } } } }';

let gateway: TestGateway;
const sockets: TestSocket[] = [];
const authorization = async (userId: number) => `Bearer ${await gateway.token(userId)}`;

/** A socket for `userId` with one subscription whose stream runs (counted by /readyz), so no later write can be missed. */
async function subscribed(userId: number, query: string): Promise<Operation> {
  const { socket, operation } = await runningSubscription(gateway.url, await authorization(userId), query);
  sockets.push(socket);
  return operation;
}

beforeAll(async () => {
  gateway = await startTestGateway();
  await gateway.seed({
    users: [
      { id: 1, username: 'alice', quota: 12.5 },
      { id: 2, username: 'bob', quota: 3 },
    ],
    conversations: [
      { userId: 1, id: 1, name: 'Trip plan', model: 'gpt-4o', enableWeb: false, messages: [{ role: 'user', content: 'Lisbon?' }] },
      { userId: 1, id: 2, name: 'Recipes', model: 'gpt-4o', enableWeb: false, messages: [] },
      { userId: 2, id: 1, name: 'Bob only', model: 'gpt-4o', enableWeb: true, messages: [] },
    ],
  });
});
afterAll(async () => {
  for (const socket of sockets) await socket.close();
  await gateway?.stop();
});

describe('Subscription.quota', () => {
  it('sends the balance now, then each new value once, whoever writes it', async () => {
    const quota = await subscribed(1, 'subscription { quota }');
    expect(data(await quota.next())).toEqual({ quota: 12.5 });

    // Another writer of the same database (the chat service charging a message).
    await gateway.models.users.updateOne({ id: 1 }, { $inc: { balanceMicros: -250_000 } });
    expect(data(await quota.next())).toEqual({ quota: 12.25 });
    // A write that leaves the balance as it was sends nothing; the next change does.
    await gateway.models.users.updateOne({ id: 1 }, { $set: { balanceMicros: 12_250_000 } });
    await gateway.models.users.updateOne({ id: 1 }, { $set: { balanceMicros: 13_000_000 } });
    expect(data(await quota.next())).toEqual({ quota: 13 });
    // Bob's balance is not Alice's business.
    await gateway.models.users.updateOne({ id: 2 }, { $inc: { balanceMicros: 1_000_000 } });
    await gateway.models.users.updateOne({ id: 1 }, { $inc: { balanceMicros: 1_000_000 } });
    expect(data(await quota.next())).toEqual({ quota: 14 });
    expect(quota.pending()).toEqual([]);
  });

  it('never goes back in time when writes race the subscription: the values only grow, ending at the stored balance', async () => {
    const socket = await connectAs(gateway.url, await authorization(2));
    sockets.push(socket);
    // Increments before, while and after the subscription starts and reads the balance.
    const writes = Array.from({ length: 60 }, (_, index) =>
      new Promise((resolve) => setTimeout(resolve, index)).then(() =>
        gateway.models.users.updateOne({ id: 2 }, { $inc: { balanceMicros: 10_000 } }),
      ),
    );
    const quota = socket.subscribe('subscription { quota }');
    await Promise.all(writes);
    const stored = (await gateway.models.users.findOne({ id: 2 }).lean())!.balanceMicros / 1_000_000;
    const seen: number[] = [];
    while (seen.at(-1) !== stored) seen.push(data(await quota.next()).quota);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    expect(new Set(seen).size).toBe(seen.length);
  });
});

describe('Subscription.conversationEvents', () => {
  it('tells of conversations created, updated and deleted, by the API and by other writers, each resolved as it is now', async () => {
    const known = await graphql(gateway, '{ one: conversation(number: 1) { id } two: conversation(number: 2) { id } }', {
      authorization: await authorization(1),
    });
    const { one, two } = known.body.data;
    const events = await subscribed(1, EVENTS);

    const renamed = await graphql(gateway, 'mutation { renameConversationByNumber(number: 1, name: "Lisbon, 3 days") { ok } }', {
      authorization: await authorization(1),
    });
    expect(renamed.body.data).toEqual({ renameConversationByNumber: { ok: true } });
    expect(data(await events.next()).conversationEvents).toEqual({
      kind: 'UPDATED',
      conversationId: one.id,
      number: 1,
      deletedConversationId: null,
      conversation: { id: one.id, number: 1, name: 'Lisbon, 3 days', messages: [{ role: 'user', content: 'Lisbon?' }] },
    });

    // The chat service appends a message, writing to the database directly.
    await gateway.models.conversations.updateOne({ userId: 1, id: 1 }, { $push: { messages: { role: 'assistant', content: 'Yes!' } } });
    expect(data(await events.next()).conversationEvents.conversation.messages).toEqual([
      { role: 'user', content: 'Lisbon?' },
      { role: 'assistant', content: 'Yes!' },
    ]);

    await gateway.models.conversations.create({ userId: 1, id: 7, name: 'New chat', model: 'gpt-4o', enableWeb: true, messages: [] });
    const created = data(await events.next()).conversationEvents;
    expect(created).toEqual({
      kind: 'CREATED',
      conversationId: expect.any(String),
      number: 7,
      deletedConversationId: null,
      conversation: { id: created.conversationId, number: 7, name: 'New chat', messages: [] },
    });

    const deleted = await graphql(gateway, 'mutation { deleteConversationByNumber(number: 2) { ok } }', {
      authorization: await authorization(1),
    });
    expect(deleted.body.data).toEqual({ deleteConversationByNumber: { ok: true } });
    expect(data(await events.next()).conversationEvents).toEqual({
      kind: 'DELETED',
      conversationId: two.id,
      number: 2,
      deletedConversationId: two.id,
      conversation: null,
    });
  });

  it("never sends one user's events to another", async () => {
    const bobs = await subscribed(2, EVENTS);
    const alices = await subscribed(1, EVENTS);

    await graphql(gateway, 'mutation { renameConversationByNumber(number: 1, name: "Mine") { ok } }', {
      authorization: await authorization(1),
    });
    await gateway.models.conversations.deleteOne({ userId: 1, id: 7 });
    await gateway.models.conversations.updateOne({ userId: 2, id: 1 }, { $set: { name: 'Bob renamed' } });

    expect(data(await alices.next()).conversationEvents).toMatchObject({ kind: 'UPDATED', number: 1, conversation: { name: 'Mine' } });
    expect(data(await alices.next()).conversationEvents).toMatchObject({ kind: 'DELETED', number: 7 });
    // Bob's one event comes after Alice's two (one stream, in commit order): he got nothing of hers.
    expect(data(await bobs.next()).conversationEvents).toMatchObject({ kind: 'UPDATED', number: 1, conversation: { name: 'Bob renamed' } });
    expect(bobs.pending()).toEqual([]);
    expect(alices.pending()).toEqual([]);
  });

  it('deleting all conversations sends one DELETED per conversation', async () => {
    const events = await subscribed(2, 'subscription { conversationEvents { kind number } }');
    await gateway.models.conversations.create({ userId: 2, id: 2, name: 'Second', model: 'gpt-4o', enableWeb: false, messages: [] });
    expect(data(await events.next()).conversationEvents).toEqual({ kind: 'CREATED', number: 2 });
    const cleaned = await graphql(gateway, 'mutation { deleteAllConversations { deletedCount } }', {
      authorization: await authorization(2),
    });
    expect(cleaned.body.data).toEqual({ deleteAllConversations: { deletedCount: 2 } });
    const ids = [data(await events.next()).conversationEvents, data(await events.next()).conversationEvents];
    expect(ids).toEqual(
      expect.arrayContaining([
        { kind: 'DELETED', number: 1 },
        { kind: 'DELETED', number: 2 },
      ]),
    );
  });
});

describe("graphql-ws's own client, as the README shows it", () => {
  it('subscribes with the credential in connectionParams and gets the balance, then its change', async () => {
    const client = createClient({
      url: `${gateway.url.replace(/^http/, 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: async () => ({ Authorization: `Bearer ${await gateway.token(1)}` }),
    });
    try {
      const values: number[] = [];
      const twoValues = new Promise<void>((resolve, reject) => {
        client.subscribe<{ quota: number }>(
          { query: 'subscription { quota }' },
          {
            next: ({ data }) => {
              values.push(data!.quota);
              if (values.length === 1)
                gateway.models.users
                  .updateOne({ id: 1 }, { $inc: { balanceMicros: 500_000 } })
                  .exec()
                  .catch(reject);
              if (values.length === 2) resolve();
            },
            error: reject,
            complete: () => {},
          },
        );
      });
      await twoValues;
      expect(values[1]! - values[0]!).toBe(0.5);
    } finally {
      await client.dispose();
    }
  });
});
