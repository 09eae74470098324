import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { captureLog } from '../support/captured-log.js';
import { graphql, startTestGateway, type TestGateway } from '../support/gateway.js';
import { sample, scrapeMetrics } from '../support/metrics.js';
import type { Operation, TestSocket } from '../support/websocket.js';
import { data, runningSubscription } from './helpers.js';

const SHARED_QUOTA = 'subscription SharedQuota { quota }';
const EVENTS =
  'subscription Events($withName: Boolean!) { conversationEvents { kind number conversation { name @include(if: $withName) } } }';
const OTHER_EVENTS = 'subscription OtherEvents($withName: Boolean!) { conversationEvents { kind number @include(if: $withName) } }';

const log = captureLog();
let gateway: TestGateway;
const sockets: TestSocket[] = [];

async function subscribed(userId: number, query: string, variables?: Record<string, unknown>): Promise<Operation> {
  const { socket, operation } = await runningSubscription(gateway.url, `Bearer ${await gateway.token(userId)}`, query, variables);
  sockets.push(socket);
  return operation;
}

/** Subscription operations named `name` run to an answer so far (the subscribe messages and each execution of an event). */
async function operationsRun(name: string): Promise<number> {
  return sample(await scrapeMetrics(gateway.url), 'graphql_operations_total', { operation_name: name, operation_type: 'subscription' });
}

/** Runs `work` and answers how many more operations named `name` ran meanwhile. */
async function executionsDuring(name: string, work: () => Promise<unknown>): Promise<number> {
  const before = await operationsRun(name);
  await work();
  return (await operationsRun(name)) - before;
}

beforeAll(async () => {
  gateway = await startTestGateway({}, { logger: log.logger });
  await gateway.seed({
    users: [
      { id: 1, username: 'alice', quota: 10 },
      { id: 2, username: 'bob', quota: 20 },
    ],
    conversations: [
      { userId: 1, id: 1, name: 'Trip plan', model: 'gpt-4o', enableWeb: false, messages: [] },
      { userId: 2, id: 1, name: 'Bob only', model: 'gpt-4o', enableWeb: false, messages: [] },
    ],
  });
});
afterAll(async () => {
  for (const socket of sockets) await socket.close();
  await gateway?.stop();
});

describe('subscriptions of one user with one document and the same variables', () => {
  it('run each balance change once for all of them, and each still gets its own value first, a late one included', async () => {
    const alices = await Promise.all(Array.from({ length: 5 }, () => subscribed(1, SHARED_QUOTA)));
    const bobs = await subscribed(2, SHARED_QUOTA);
    for (const quota of alices) expect(data(await quota.next())).toEqual({ quota: 10 });
    expect(data(await bobs.next())).toEqual({ quota: 20 });

    const once = await executionsDuring('SharedQuota', async () => {
      await gateway.models.users.updateOne({ id: 1 }, { $inc: { balanceMicros: 1_500_000 } });
      for (const quota of alices) expect(data(await quota.next())).toEqual({ quota: 11.5 });
    });
    expect(once).toBe(1);

    // A late subscriber reads the balance now for its first value, then shares the next change with the others.
    const late = await subscribed(1, SHARED_QUOTA);
    expect(data(await late.next())).toEqual({ quota: 11.5 });
    const again = await executionsDuring('SharedQuota', async () => {
      await gateway.models.users.updateOne({ id: 1 }, { $inc: { balanceMicros: 500_000 } });
      for (const quota of [...alices, late]) expect(data(await quota.next())).toEqual({ quota: 12 });
    });
    expect(again).toBe(1);
    // Bob's subscription, the same document, got nothing of Alice's.
    expect(bobs.pending()).toEqual([]);
  });

  it('never share with other variables, another document or another user: each gets what its own would answer', async () => {
    const withName = await Promise.all([subscribed(1, EVENTS, { withName: true }), subscribed(1, EVENTS, { withName: true })]);
    const withoutName = await subscribed(1, EVENTS, { withName: false });
    const other = await subscribed(1, OTHER_EVENTS, { withName: true });
    const bobs = await subscribed(2, EVENTS, { withName: true });

    const events = await executionsDuring('Events', async () => {
      const renamed = await graphql(gateway, 'mutation { renameConversationByNumber(number: 1, name: "Lisbon") { ok } }', {
        authorization: `Bearer ${await gateway.token(1)}`,
      });
      expect(renamed.body.data).toEqual({ renameConversationByNumber: { ok: true } });
      for (const operation of withName) {
        expect(data(await operation.next())).toEqual({
          conversationEvents: { kind: 'UPDATED', number: 1, conversation: { name: 'Lisbon' } },
        });
      }
      expect(data(await withoutName.next())).toEqual({ conversationEvents: { kind: 'UPDATED', number: 1, conversation: {} } });
      expect(data(await other.next())).toEqual({ conversationEvents: { kind: 'UPDATED', number: 1 } });
    });
    // The two with the same variables shared one; the one without the name ran its own.
    expect(events).toBe(2);

    const bobsEvents = await executionsDuring('Events', async () => {
      await gateway.models.conversations.updateOne({ userId: 2, id: 1 }, { $set: { name: 'Bob renamed' } });
      expect(data(await bobs.next())).toEqual({
        conversationEvents: { kind: 'UPDATED', number: 1, conversation: { name: 'Bob renamed' } },
      });
    });
    expect(bobsEvents).toBe(1);
    for (const operation of [...withName, withoutName, other]) expect(operation.pending()).toEqual([]);
  });
});

describe('an error in an execution its subscribers share', () => {
  it('reaches each of them, names the one log line that tells of it, and ends none of them', async () => {
    const roles = 'subscription Roles { conversationEvents { number conversation { messages { role } } } }';
    const subscribers = await Promise.all([subscribed(1, roles), subscribed(1, roles)]);
    const logged = log.lines().length;

    // Another writer stores a message whose role is no string: the schema cannot show it.
    await gateway.models.conversations.collection.insertOne({
      userId: 1,
      id: 9,
      name: 'Broken',
      model: 'gpt-4o',
      enableWeb: false,
      messages: [{ role: { nested: true }, content: 'x' }],
    });
    const answers = [];
    for (const subscriber of subscribers) answers.push(await subscriber.next());
    for (const { type, payload } of answers) {
      expect(type).toBe('next');
      expect(payload.data).toEqual({ conversationEvents: { number: 9, conversation: null } });
      expect(payload.errors).toEqual([expect.objectContaining({ extensions: expect.objectContaining({ code: 'INTERNAL_SERVER_ERROR' }) })]);
    }
    const requestIds = answers.map(({ payload }) => payload.errors[0].extensions.requestId);
    expect(requestIds[1]).toBe(requestIds[0]);
    const unexpected = log
      .lines()
      .slice(logged)
      .filter((line) => line.msg === 'unexpected error in a GraphQL operation');
    expect(unexpected).toEqual([expect.objectContaining({ requestId: requestIds[0], door: 'websocket', operation: 'Roles' })]);

    await gateway.models.conversations.deleteOne({ userId: 1, id: 9 });
    for (const subscriber of subscribers)
      expect(data(await subscriber.next())).toEqual({ conversationEvents: { number: 9, conversation: null } });
  });
});
