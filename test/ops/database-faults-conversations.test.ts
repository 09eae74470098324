import type { Document } from 'mongodb';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { toGlobalId } from '../../src/graphql/global-id.js';
import { officialEnvironment, QUICK_SSO, startStub } from '../billing/official.js';
import { type FaultDatabase, faultSuiteTitle, faultTestsUnavailable, startFaultDatabase } from '../support/fail-points.js';
import { graphql, type TestGateway } from '../support/gateway.js';
import { sample, scrapeMetrics } from '../support/metrics.js';
import { expectDatabaseUnavailable, METRICS_TOKEN, rest, startFaultGateway, unavailableAnswer } from './database-faults.js';

/**
 * The conversation endpoints and the balance read while the database fails as a real cluster
 * does: commands failing with the codes of an election or a shutdown (once, as the driver's
 * retry then finds a primary; twice, as when it does not), connections closed before a command
 * runs, replies lost after it ran, programming errors, and commands that hang. Each fault is
 * MongoDB's own (`failCommand`, for the gateway's connections only) or the network's (a proxy
 * that drops a reply), so the same tests run against a replica set started with test commands.
 */

const unavailableHere = await faultTestsUnavailable();

/** What mongod answers during an election, a shutdown or a network failure between members: the driver's retryable codes. */
const RETRYABLE_CODES = [6, 7, 89, 91, 134, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436];
/** The codes of an election and a shutdown, the writes' usual failures. */
const STEP_DOWN_CODES = [10107, 11602, 91];
/** On the official deployment, whose reads are the same: those, and the timeouts and network failures between members. */
const SOME_RETRYABLE_CODES = [...STEP_DOWN_CODES, 89, 262, 9001];
const CONVERSATIONS = 5;

const seed = (userId: number, username: string) => ({
  users: [{ id: userId, username, quota: 7.25 }],
  conversations: Array.from({ length: CONVERSATIONS }, (_, index) => ({
    userId,
    id: index + 1,
    name: `Conversation ${index + 1}`,
    model: 'gpt-4o',
    enableWeb: false,
    messages: [{ role: 'user', content: `hello ${index + 1}` }],
  })),
});

describe.skipIf(unavailableHere !== undefined).each(['community', 'official'] as const)(
  faultSuiteTitle('database faults on the %s deployment', unavailableHere),
  (deployment) => {
    let faults: FaultDatabase;
    let gateway: TestGateway;
    let closeStub: (() => Promise<void>) | undefined;
    let authorization: string;
    /** A fresh user per test, so that each test sees its own conversations from 1 to CONVERSATIONS. */
    let userId = 0;

    beforeAll(async () => {
      faults = await startFaultDatabase();
      let environment: Record<string, string> = {};
      if (deployment === 'official') {
        const stub = await startStub({});
        closeStub = () => stub.close();
        environment = officialEnvironment(stub, QUICK_SSO);
      }
      gateway = await startFaultGateway(faults, environment);
    });
    afterAll(async () => {
      await gateway?.stop();
      await closeStub?.();
      await faults?.stop();
    });
    beforeEach(async () => {
      userId += 1;
      await gateway.seed(seed(userId, `user${userId}`));
      authorization = `Bearer ${await gateway.token(userId)}`;
    });
    // Whatever a test did, no fault outlives it: the next test and the checks run on a sound database.
    afterEach(async () => {
      await faults.off();
    });

    /** Turns the fault off; answers how often it fired. */
    const fired = async () => (await faults.off()).failCommand;
    const conversations = () => faults.db.collection('conversations');
    const stored = async () =>
      (
        await conversations()
          .find({ userId }, { projection: { _id: 0, id: 1, name: 1 } })
          .sort({ id: 1 })
          .toArray()
      ).map((row) => `${row.id} ${row.name}`);
    const allStored = Array.from({ length: CONVERSATIONS }, (_, index) => `${index + 1} Conversation ${index + 1}`);
    const namespace = () => `${faults.database.dbName}.conversations`;
    const sequence = async () => (await faults.db.collection('users').findOne({ id: userId }))?.lastConversationId as number;
    const listRest = () => rest(gateway, authorization, '/conversation/list');
    const listGraphql = () => graphql(gateway, '{ conversations(first: 3) { nodes { number name } } }', { authorization });
    const expectedList = () =>
      JSON.stringify({
        status: true,
        message: '',
        data: [5, 4, 3, 2, 1].map((id) => ({
          id,
          user_id: userId,
          name: `Conversation ${id}`,
          message: null,
          model: 'gpt-4o',
          enable_web: false,
        })),
      });
    const firstThree = { conversations: { nodes: [5, 4, 3].map((number) => ({ number, name: `Conversation ${number}` })) } };

    describe('reads', () => {
      const codes = deployment === 'community' ? RETRYABLE_CODES : SOME_RETRYABLE_CODES;
      it.each(codes)('failing once with %i are retried by the driver and answered', async (errorCode) => {
        await faults.failCommand({ times: 1 }, { failCommands: ['find'], namespace: namespace(), errorCode });
        expect(await listRest()).toMatchObject({ status: 200, text: expectedList() });
        expect(await fired()).toBe(1);
        await faults.failCommand({ times: 1 }, { failCommands: ['find'], namespace: namespace(), errorCode });
        expect(await listGraphql()).toMatchObject({ status: 200, body: { data: firstThree } });
        expect(await fired()).toBe(1);
      });

      it('cut off before the server answers (a closed connection) are retried and answered', async () => {
        await faults.failCommand({ times: 1 }, { failCommands: ['find'], namespace: namespace(), closeConnection: true });
        expect(await listRest()).toMatchObject({ status: 200, text: expectedList() });
        expect(await fired()).toBe(1);
      });

      it.each(codes)('failing with %i on the retry too answer 503 DATABASE_UNAVAILABLE promptly', async (errorCode) => {
        await faults.failCommand('alwaysOn', { failCommands: ['find'], errorCode });
        const [list, load, quota, graph] = await Promise.all([
          listRest(),
          rest(gateway, authorization, '/conversation/load?id=1'),
          rest(gateway, authorization, '/quota'),
          listGraphql(),
        ]);
        expect([list, load, quota].map(({ status, text }) => ({ status, text }))).toEqual([
          unavailableAnswer('message'),
          unavailableAnswer('message'),
          unavailableAnswer('error'),
        ]);
        expectDatabaseUnavailable(graph);
        // Promptly: the two attempts are answered at once (a shutdown's codes add a wait for the server's next check), nothing waits for a timeout.
        expect(Math.max(list.ms, load.ms, quota.ms)).toBeLessThan(3_000);
        // Each request failed at least once; after a shutdown's codes the driver may find its pool cleared instead.
        expect(await fired()).toBeGreaterThanOrEqual(4);
      });

      it('cut off twice answer 503 DATABASE_UNAVAILABLE', async () => {
        await faults.failCommand({ times: 2 }, { failCommands: ['find'], namespace: namespace(), closeConnection: true });
        expect(await listRest()).toMatchObject(unavailableAnswer('message'));
        expect(await fired()).toBe(2);
      });

      it('running past their time limit (50 MaxTimeMSExpired) answer 503 DATABASE_UNAVAILABLE, over REST and GraphQL', async () => {
        // The server gave up on the read at the time limit it was given: not retried by the driver, and no bug.
        await faults.failCommand({ times: 1 }, { failCommands: ['find'], namespace: namespace(), errorCode: 50 });
        expect(await listRest()).toMatchObject(unavailableAnswer('message'));
        expect(await fired()).toBe(1);
        await faults.failCommand({ times: 1 }, { failCommands: ['find'], namespace: namespace(), errorCode: 50 });
        expectDatabaseUnavailable(await listGraphql());
        expect(await fired()).toBe(1);
        await faults.failCommand({ times: 1 }, { failCommands: ['find'], namespace: namespace(), errorCode: 50 });
        expect(await rest(gateway, authorization, '/conversation/load?id=1')).toMatchObject(unavailableAnswer('message'));
        expect(await fired()).toBe(1);
      });

      it('failing with a programming error (2 BadValue) answer an internal error, without its cause', async () => {
        await faults.failCommand({ times: 2 }, { failCommands: ['find'], namespace: namespace(), errorCode: 2 });
        const list = await listRest();
        expect(list.status).toBe(500);
        expect(JSON.parse(list.text)).toEqual({ status: false, message: 'internal error', request_id: expect.any(String) });
        const graph = await listGraphql();
        expect(graph.status).toBe(200);
        expect(graph.body.errors).toEqual([
          {
            message: 'internal server error',
            path: ['conversations'],
            extensions: { code: 'INTERNAL_SERVER_ERROR', requestId: expect.any(String) },
          },
        ]);
        expect(await fired()).toBe(2);
      });
    });

    describe('conversation writes', () => {
      const deleteRest = (id: number) => rest(gateway, authorization, `/conversation/delete?id=${id}`);
      const deleteGraphql = (number: number) =>
        graphql(gateway, 'mutation ($id: ID!) { deleteConversation(id: $id) { ok error { code } deletedConversationId } }', {
          authorization,
          variables: { id: toGlobalId({ type: 'Conversation', userId, number }) },
        });
      const renameRest = (id: number, name: string) => rest(gateway, authorization, '/conversation/rename', { id, name });
      const renameGraphql = (number: number, name: string) =>
        graphql(
          gateway,
          'mutation ($id: ID!, $name: String!) { renameConversation(id: $id, name: $name) { ok conversation { number name } } }',
          {
            authorization,
            variables: { id: toGlobalId({ type: 'Conversation', userId, number }), name },
          },
        );
      const isCommand = (name: string, collection: string) => (command: Document) => command[name] === collection;

      it('a delete whose reply is lost after the server deleted answers deleted, and deletes once', async () => {
        const before = await sequence();
        faults.proxy.loseReplies(isCommand('delete', 'conversations'));
        expect(await deleteRest(2)).toMatchObject({ status: 200, text: '{"status":true}' });
        faults.proxy.loseReplies(isCommand('delete', 'conversations'));
        expect(await deleteGraphql(4)).toMatchObject({
          status: 200,
          body: {
            data: {
              deleteConversation: { ok: true, error: null, deletedConversationId: toGlobalId({ type: 'Conversation', userId, number: 4 }) },
            },
          },
        });
        expect(
          faults.proxy
            .lostReplies()
            .slice(-2)
            .map((command) => command.deletes[0].q),
        ).toEqual([
          { userId, id: 2 },
          { userId, id: 4 },
        ]);
        expect(await stored()).toEqual(['1 Conversation 1', '3 Conversation 3', '5 Conversation 5']);
        // Numbers live on in the owner's sequence: a retried delete hands none out again.
        expect(await sequence()).toBe(before);
      });

      it.each(STEP_DOWN_CODES)('a delete failing with %i (RetryableWriteError) is retried and deletes once', async (errorCode) => {
        await faults.failCommand({ times: 1 }, { failCommands: ['delete'], namespace: namespace(), errorCode });
        expect(await deleteRest(3)).toMatchObject({ status: 200, text: '{"status":true}' });
        expect(await fired()).toBe(1);
        await faults.failCommand({ times: 1 }, { failCommands: ['delete'], namespace: namespace(), closeConnection: true });
        expect(await deleteGraphql(5)).toMatchObject({ status: 200, body: { data: { deleteConversation: { ok: true } } } });
        expect(await fired()).toBe(1);
        expect(await stored()).toEqual(['1 Conversation 1', '2 Conversation 2', '4 Conversation 4']);
      });

      it('a rename whose reply is lost after the server renamed answers the new name, written once', async () => {
        faults.proxy.loseReplies(isCommand('findAndModify', 'conversations'));
        expect(await renameRest(1, 'Renamed over REST')).toMatchObject({ status: 200, text: '{"status":true,"message":""}' });
        faults.proxy.loseReplies(isCommand('findAndModify', 'conversations'));
        expect(await renameGraphql(2, 'Renamed over GraphQL')).toMatchObject({
          status: 200,
          body: { data: { renameConversation: { ok: true, conversation: { number: 2, name: 'Renamed over GraphQL' } } } },
        });
        expect(
          faults.proxy
            .lostReplies()
            .slice(-2)
            .map((command) => command.update.$set.name),
        ).toEqual(['Renamed over REST', 'Renamed over GraphQL']);
        expect(await stored()).toEqual(['1 Renamed over REST', '2 Renamed over GraphQL', ...allStored.slice(2)]);
      });

      it.each(STEP_DOWN_CODES)('a rename failing with %i (RetryableWriteError) is retried and answered', async (errorCode) => {
        await faults.failCommand({ times: 1 }, { failCommands: ['findAndModify'], namespace: namespace(), errorCode });
        expect(await renameGraphql(3, 'After the election')).toMatchObject({
          status: 200,
          body: { data: { renameConversation: { ok: true, conversation: { number: 3, name: 'After the election' } } } },
        });
        expect(await fired()).toBe(1);
        expect(await stored()).toEqual([...allStored.slice(0, 2), '3 After the election', ...allStored.slice(3)]);
      });

      it('writes that cannot be retried change nothing and answer 503 DATABASE_UNAVAILABLE', async () => {
        // The server labels nothing (errorLabels: []): the driver does not retry.
        await faults.failCommand({ times: 1 }, { failCommands: ['delete'], namespace: namespace(), errorCode: 10107, errorLabels: [] });
        expect(await deleteRest(1)).toMatchObject(unavailableAnswer('message'));
        expect(await fired()).toBe(1);
        // The driver retries once; the retry fails too.
        await faults.failCommand({ times: 2 }, { failCommands: ['findAndModify'], namespace: namespace(), errorCode: 11602 });
        expect(await renameRest(1, 'Never written')).toMatchObject(unavailableAnswer('message'));
        expect(await fired()).toBe(2);
        await faults.failCommand({ times: 2 }, { failCommands: ['findAndModify'], namespace: namespace(), closeConnection: true });
        expectDatabaseUnavailable(await renameGraphql(1, 'Never written either'));
        expect(await fired()).toBe(2);
        // Deleting many documents is not a retryable write: one failure is the answer.
        await faults.failCommand({ times: 1 }, { failCommands: ['delete'], namespace: namespace(), errorCode: 91 });
        expect(await rest(gateway, authorization, '/conversation/clean')).toMatchObject(unavailableAnswer('message'));
        expect(await fired()).toBe(1);
        await faults.failCommand({ times: 1 }, { failCommands: ['delete'], namespace: namespace(), closeConnection: true });
        expectDatabaseUnavailable(await graphql(gateway, 'mutation { deleteAllConversations { ok deletedCount } }', { authorization }));
        expect(await fired()).toBe(1);
        expect(await stored()).toEqual(allStored);
      });

      it('a clean whose reply is lost after the server deleted answers 503 (its outcome is unknown), and a second clean answers done', async () => {
        const before = await sequence();
        faults.proxy.loseReplies(isCommand('delete', 'conversations'));
        expect(await rest(gateway, authorization, '/conversation/clean')).toMatchObject(unavailableAnswer('message'));
        expect(await stored()).toEqual([]);
        expect(await rest(gateway, authorization, '/conversation/clean')).toMatchObject({
          status: 200,
          text: '{"status":true,"message":""}',
        });
        expect(await sequence()).toBe(before);
      });
    });

    describe.runIf(deployment === 'community')('commands that hang', () => {
      /** Two attempts of 3 s (the socket timeout, then the driver's one retry). */
      const BUDGET_MS = 6_000;

      it('answer 503 within the budget; /readyz stays ready while the database answers its ping', async () => {
        await faults.failCommand('alwaysOn', {
          failCommands: ['find'],
          namespace: namespace(),
          blockConnection: true,
          blockTimeMS: 10_000,
        });
        const requests = Promise.all([listRest(), rest(gateway, authorization, '/conversation/load?id=1'), listGraphql()]);
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        const readiness = await fetch(`${gateway.url}/readyz`);
        expect(readiness.status).toBe(200);
        const [list, load, graph] = await requests;
        expect([list, load].map(({ status, text }) => ({ status, text }))).toEqual([
          unavailableAnswer('message'),
          unavailableAnswer('message'),
        ]);
        expectDatabaseUnavailable(graph);
        // Not before the budget (timers never end early); and a 503, not the find's answer once its
        // 10 s block ends, says it gave up at the budget: the outcome decides, not the machine's speed.
        expect(Math.max(list.ms, load.ms)).toBeGreaterThanOrEqual(BUDGET_MS - 500);
        expect(await fired()).toBe(6);

        const metrics = await scrapeMetrics(gateway.url, METRICS_TOKEN);
        // The stores count an operation once, the driver's retry within it: three reads failed.
        expect(sample(metrics, 'mongodb_commands_total', { command: 'find', result: 'failure' })).toBeGreaterThanOrEqual(3);
        expect(sample(metrics, 'http_requests_total', { route: '/conversation/list', status: '503' })).toBeGreaterThanOrEqual(1);
        expect(sample(metrics, 'graphql_errors_total', { code: 'DATABASE_UNAVAILABLE' })).toBeGreaterThanOrEqual(3);
        console.info(`a find that hangs: REST answered 503 after ${list.ms} and ${load.ms} ms`);
      });

      it('turn /readyz to 503 within its 1 s wait when the ping hangs too, and back to 200 once it answers', async () => {
        await faults.failCommand('alwaysOn', { failCommands: ['ping'], blockConnection: true, blockTimeMS: 3_000 });
        const started = performance.now();
        const readiness = await fetch(`${gateway.url}/readyz`);
        const ms = Math.round(performance.now() - started);
        expect(readiness.status).toBe(503);
        expect(await readiness.json()).toMatchObject({ status: 'database unavailable' });
        // Before the ping's 3 s block ends (or the socket timeout, as long): its own 1 s wait ended it.
        expect(ms).toBeLessThan(3_000);
        await faults.off();
        await expect.poll(async () => (await fetch(`${gateway.url}/readyz`)).status, { timeout: 10_000 }).toBe(200);
      });
    });
  },
);
