import type { CommandFailedEvent, Document } from 'mongodb';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { data, runningSubscription } from '../subscriptions/helpers.js';
import { type CapturedLog, captureLog } from '../support/captured-log.js';
import { type FaultDatabase, faultSuiteTitle, faultTestsUnavailable, startFaultDatabase } from '../support/fail-points.js';
import type { TestGateway } from '../support/gateway.js';
import { sample, scrapeMetrics } from '../support/metrics.js';
import type { Operation, OperationMessage, TestSocket } from '../support/websocket.js';
import { METRICS_TOKEN, startFaultGateway } from './database-faults.js';

/**
 * Live updates over WebSocket while the change streams behind them fail as during an election or a
 * failover: a `getMore` failing with a resumable error (labelled by the server, or a closed
 * connection) is resumed from its token, and every subscriber gets every event once, in order;
 * an error the stream cannot resume from ends the conversation subscriptions with EVENTS_LOST
 * (the client loads the list again), has the balance read again, is logged once, and new
 * subscriptions work at once.
 */

const unavailableHere = await faultTestsUnavailable();

const EVENTS = 'subscription { conversationEvents { kind number } }';
const QUOTA = 'subscription { quota }';
const FEEDS = ['conversations', 'users'] as const;
type Feed = (typeof FEEDS)[number];

interface GetMoreFault {
  name: string;
  /** Sets the fault for the next getMore of the feed's stream. */
  arm(faults: FaultDatabase, namespace: string): Promise<void>;
}

/** What an election or a failover does to a change stream's getMore, all of which it resumes from. */
const RESUMABLE: GetMoreFault[] = [
  {
    name: '10107 NotWritablePrimary, labelled ResumableChangeStreamError',
    arm: (faults, namespace) =>
      faults.failCommand(
        { times: 1 },
        { failCommands: ['getMore'], namespace, errorCode: 10107, errorLabels: ['ResumableChangeStreamError'] },
      ),
  },
  {
    name: '11602 InterruptedDueToReplStateChange once its cursor is found (the server labels it)',
    arm: (faults, namespace) => faults.failGetMoreAfterCursorCheckout({ times: 1 }, { errorCode: 11602, namespace }),
  },
  {
    name: 'its connection closed',
    arm: (faults, namespace) => faults.failCommand({ times: 1 }, { failCommands: ['getMore'], namespace, closeConnection: true }),
  },
  {
    // The driver resumes only what the server labels resumable; the gateway reopens the stream from its last change itself.
    name: '10107 NotWritablePrimary, unlabelled',
    arm: (faults, namespace) =>
      faults.failCommand({ times: 1 }, { failCommands: ['getMore'], namespace, errorCode: 10107, errorLabels: [] }),
  },
];

/** Errors after which the stream cannot go on from its last change. */
const NOT_RESUMABLE = [
  { name: '286 ChangeStreamHistoryLost', errorCode: 286, logged: 'change stream history lost' },
  { name: '280 ChangeStreamFatalError', errorCode: 280, logged: 'change stream failed' },
  { name: '2 BadValue, neither transient nor resumable', errorCode: 2, logged: 'change stream failed' },
];

describe.skipIf(unavailableHere !== undefined)(faultSuiteTitle('live updates under database faults', unavailableHere), () => {
  let faults: FaultDatabase;
  let gateway: TestGateway;
  let log: CapturedLog;
  const sockets: TestSocket[] = [];
  let nextNumber = 0;
  /** Alice has two sockets (and both subscriptions on the first); Bob has one. */
  let alice: { events: Operation[]; quota: Operation };
  let bob: { events: Operation[]; quota: Operation };

  beforeAll(async () => {
    faults = await startFaultDatabase();
    log = captureLog();
    gateway = await startFaultGateway(faults, {}, { logger: log.logger });
    await gateway.seed({
      users: [
        { id: 1, username: 'alice', quota: 10 },
        { id: 2, username: 'bob', quota: 20 },
      ],
    });
  });
  afterAll(async () => {
    await gateway?.stop();
    await faults?.stop();
  });

  const subscribe = async (userId: number, query: string): Promise<Operation> => {
    const { socket, operation } = await runningSubscription(gateway.url, `Bearer ${await gateway.token(userId)}`, query);
    sockets.push(socket);
    return operation;
  };
  const balance = async (userId: number) => ((await faults.db.collection('users').findOne({ id: userId }))?.balanceMicros as number) / 1e6;

  beforeEach(async () => {
    alice = { quota: await subscribe(1, QUOTA), events: [await subscribe(1, EVENTS), await subscribe(1, EVENTS)] };
    bob = { quota: await subscribe(2, QUOTA), events: [await subscribe(2, EVENTS)] };
    // Each subscription's first answer: the balance now.
    expect(data(await alice.quota.next())).toEqual({ quota: await balance(1) });
    expect(data(await bob.quota.next())).toEqual({ quota: await balance(2) });
  });
  afterEach(async () => {
    await faults.off();
    for (const socket of sockets.splice(0)) await socket.close();
  });

  /** What another writer does (the chat service): a conversation for each user, renamed, and a point on each balance. */
  async function writeRound(): Promise<{ alice: Document[]; bob: Document[] }> {
    const conversations = faults.db.collection('conversations');
    const events = { alice: [] as Document[], bob: [] as Document[] };
    for (const [userId, seen] of [
      [1, events.alice],
      [2, events.bob],
    ] as const) {
      const number = (nextNumber += 1);
      await conversations.insertOne({ userId, id: number, name: `New ${number}`, model: 'gpt-4o', enableWeb: false, messages: [] });
      await conversations.updateOne({ userId, id: number }, { $set: { name: `Renamed ${number}` } });
      await faults.db.collection('users').updateOne({ id: userId }, { $inc: { balanceMicros: 1_000_000 } });
      seen.push({ kind: 'CREATED', number }, { kind: 'UPDATED', number });
    }
    return events;
  }

  /** Resolves once the gateway's client saw a getMore fail. */
  function getMoreFailed(): Promise<CommandFailedEvent> {
    const client = gateway.database.connection.getClient();
    return new Promise((resolve) => {
      const listener = (event: CommandFailedEvent) => {
        if (event.commandName !== 'getMore') return;
        client.off('commandFailed', listener);
        resolve(event);
      };
      client.on('commandFailed', listener);
    });
  }

  /** The next `count` messages of an operation, and nothing more for a while. */
  async function received(operation: Operation, count: number): Promise<OperationMessage[]> {
    const messages: OperationMessage[] = [];
    for (let index = 0; index < count; index += 1) messages.push(await operation.next(10_000));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(operation.pending()).toEqual([]);
    return messages;
  }

  describe.each(FEEDS)('the %s stream', (feed: Feed) => {
    it.each(RESUMABLE)('resumes after a getMore failing with $name: every event once, in order', async (fault) => {
      const restartsFromNow = async () =>
        sample(await scrapeMetrics(gateway.url, METRICS_TOKEN), 'mongodb_change_stream_restarts_total', { resumed: 'false' });
      const restartsBefore = await restartsFromNow();
      const before = await writeRound();
      const failed = getMoreFailed();
      await fault.arm(faults, `${faults.database.dbName}.${feed}`);
      const during = await writeRound();
      await failed;
      const after = await writeRound();
      const fired = await faults.off();
      expect(fired.failCommand + fired.failGetMoreAfterCursorCheckout).toBe(1);

      for (const [person, written] of [
        [alice, [...before.alice, ...during.alice, ...after.alice]],
        [bob, [...before.bob, ...during.bob, ...after.bob]],
      ] as const) {
        for (const events of person.events) {
          expect((await received(events, written.length)).map(data)).toEqual(written.map((event) => ({ conversationEvents: event })));
        }
      }
      for (const [quota, userId] of [
        [alice.quota, 1],
        [bob.quota, 2],
      ] as const) {
        const start = (await balance(userId)) - 3;
        expect((await received(quota, 3)).map(data)).toEqual([{ quota: start + 1 }, { quota: start + 2 }, { quota: start + 3 }]);
      }
      // Nothing was lost: the stream never reopened from now.
      expect(await restartsFromNow()).toBe(restartsBefore);
    });
  });

  it.each(NOT_RESUMABLE)(
    'a conversations getMore failing with $name ends the conversation subscriptions with EVENTS_LOST, logged once; new ones work',
    async ({ errorCode, logged }) => {
      const linesBefore = log.lines().length;
      const restartsBefore = sample(await scrapeMetrics(gateway.url, METRICS_TOKEN), 'mongodb_change_stream_restarts_total', {
        collection: 'conversations',
        resumed: 'false',
      });
      const failed = getMoreFailed();
      await faults.failCommand(
        { times: 1 },
        { failCommands: ['getMore'], namespace: `${faults.database.dbName}.conversations`, errorCode },
      );
      await writeRound();
      await failed;

      for (const events of [...alice.events, ...bob.events]) {
        let message = await events.next(10_000);
        // Events that came before the failure may come first; then the end.
        while (message.type === 'next') message = await events.next(10_000);
        expect(message.type).toBe('error');
        expect(message.payload).toEqual([
          {
            message:
              'events were lost (the change stream lost its place, or this client read too slowly): load the list again and subscribe again',
            extensions: { code: 'EVENTS_LOST' },
          },
        ]);
      }
      const lines = log.lines().slice(linesBefore);
      expect(lines.filter((line) => String(line.msg).startsWith('change stream')).map((line) => line.msg)).toEqual([
        expect.stringMatching(new RegExp(`^${logged}`)),
      ]);
      const metrics = await scrapeMetrics(gateway.url, METRICS_TOKEN);
      expect(sample(metrics, 'mongodb_change_stream_restarts_total', { collection: 'conversations', resumed: 'false' })).toBe(
        restartsBefore + 1,
      );

      // Balances were not affected: every change of theirs still arrives.
      expect((await received(alice.quota, 1)).map(data)).toEqual([{ quota: await balance(1) }]);
      // A client that subscribes again gets what is written from now on.
      const again = await subscribe(1, EVENTS);
      const next = await writeRound();
      expect((await received(again, next.alice.length)).map(data)).toEqual(next.alice.map((event) => ({ conversationEvents: event })));
    },
  );

  it.each(NOT_RESUMABLE.slice(0, 1))(
    'a users getMore failing with $name has the balances read again: subscribers get the right balance, and go on',
    async ({ errorCode }) => {
      const failed = getMoreFailed();
      await faults.failCommand({ times: 1 }, { failCommands: ['getMore'], namespace: `${faults.database.dbName}.users`, errorCode });
      await writeRound();
      await failed;
      await expect.poll(async () => data(await alice.quota.next(10_000)).quota, { timeout: 10_000 }).toBe(await balance(1));
      await writeRound();
      expect((await received(alice.quota, 1)).map(data)).toEqual([{ quota: await balance(1) }]);
      expect((await received(alice.events[0]!, 4)).length).toBe(4);
    },
  );
});
