import { type EmbeddedServer, startEmbeddedServer } from '@chat-gateway/embedded-mongodb';
import { type Db, MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { secretKey, signAccessToken } from '../../src/auth/access-token.js';
import { loadConfig } from '../../src/config.js';
import { withDatabaseName } from '../../src/db/uri.js';
import { loadSeed } from '../../src/seed/seed-file.js';
import { type RunningService, startService } from '../../src/service.js';
import { type CapturedLog, captureLog } from '../support/captured-log.js';
import { TEST_JWT_SECRET } from '../support/gateway.js';
import { sample, scrapeMetrics } from '../support/metrics.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { connectAs, type Operation, type TestSocket } from '../support/websocket.js';
import { subscriptionsRunning } from './helpers.js';

const DATABASE = 'recovery';
const portOf = (server: EmbeddedServer) => Number(new URL(server.uri).port);

let engine: EmbeddedServer;
let restarted: EmbeddedServer | undefined;
let proxy: TcpProxy;
let direct: MongoClient;
let service: RunningService;
let log: CapturedLog;
const sockets: TestSocket[] = [];

/** Writes as another writer of the database would: straight to the engine, never through the cut link. */
const db = (): Db => direct.db(DATABASE);

beforeAll(async () => {
  engine = await startEmbeddedServer();
  proxy = await startTcpProxy(portOf(engine));
  log = captureLog();
  const config = loadConfig({
    DATA_DIR: 'memory',
    PORT: '0',
    HOST: '127.0.0.1',
    MONGODB_URI: `mongodb://127.0.0.1:${proxy.port}/${DATABASE}?directConnection=true`,
    JWT_SECRET: TEST_JWT_SECRET,
    RATE_LIMIT: '0',
  });
  service = await startService(config, log.logger);
  await loadSeed(service.domains, {
    users: [{ id: 1, username: 'alice', quota: 10 }],
    conversations: [{ userId: 1, id: 1, name: 'Before', model: 'gpt-4o', enableWeb: false, messages: [] }],
  });
  direct = await MongoClient.connect(withDatabaseName(engine.uri, DATABASE));
});
afterAll(async () => {
  for (const socket of sockets) await socket.close();
  await service?.stop();
  await direct?.close();
  await proxy?.close();
  await engine?.close();
  await restarted?.close();
});

async function subscribe(query: string): Promise<Operation> {
  const socket = await connectAs(service.url, `Bearer ${await signAccessToken(secretKey(TEST_JWT_SECRET), 1)}`);
  sockets.push(socket);
  const before = await subscriptionsRunning(service.url);
  const operation = socket.subscribe(query);
  await expect.poll(() => subscriptionsRunning(service.url)).toBe(before + 1);
  return operation;
}

const logged = (message: string) => log.lines().filter((line) => line.msg === message);

describe('change streams across database hiccups', () => {
  let quota: Operation;
  let events: Operation;

  it('resume from their last change when the link comes back: nothing written meanwhile is lost', async () => {
    quota = await subscribe('subscription { quota }');
    events = await subscribe('subscription { conversationEvents { kind number conversation { name } } }');
    expect((await quota.next()).payload).toEqual({ data: { quota: 10 } });

    proxy.cut();
    await db()
      .collection('users')
      .updateOne({ id: 1 }, { $inc: { balanceMicros: 1_000_000 } });
    await db()
      .collection('conversations')
      .updateOne({ userId: 1, id: 1 }, { $set: { name: 'Written while cut off' } });
    await db()
      .collection('users')
      .updateOne({ id: 1 }, { $inc: { balanceMicros: 1_000_000 } });
    await expect
      .poll(() => logged('change stream interrupted: reopening it from its last change once the database answers').length, {
        timeout: 10_000,
      })
      .toBe(2);
    proxy.restore();

    expect((await quota.next(10_000)).payload).toEqual({ data: { quota: 11 } });
    expect((await quota.next()).payload).toEqual({ data: { quota: 12 } });
    expect((await events.next(10_000)).payload).toEqual({
      data: { conversationEvents: { kind: 'UPDATED', number: 1, conversation: { name: 'Written while cut off' } } },
    });
    await expect
      .poll(() => logged('change stream reopened after its last change: no change was missed').length, { timeout: 10_000 })
      .toBe(2);
    const metrics = await scrapeMetrics(service.url);
    expect(sample(metrics, 'mongodb_change_stream_restarts_total', { collection: 'users', resumed: 'true' })).toBe(1);
    expect(sample(metrics, 'mongodb_change_stream_restarts_total', { collection: 'conversations', resumed: 'true' })).toBe(1);
  });

  it('say so when the database lost their history (a restarted engine), and start again from now', async () => {
    proxy.cut();
    // The engine restarts: a new one, empty, where the old one was; another writer puts data back.
    restarted = await startEmbeddedServer();
    const fresh = await MongoClient.connect(withDatabaseName(restarted.uri, DATABASE));
    await fresh.db(DATABASE).collection('users').insertOne({ id: 1, username: 'alice', balanceMicros: 99_000_000, lastConversationId: 0 });
    proxy.restore(portOf(restarted));

    await expect
      .poll(() => log.lines().filter((line) => String(line.msg).startsWith('change stream history lost')).length, { timeout: 15_000 })
      .toBe(2);
    // The balance is read again; the conversation list cannot be, so its subscriber is told.
    expect((await quota.next(10_000)).payload).toEqual({ data: { quota: 99 } });
    const lost = await events.next(10_000);
    expect(lost.type).toBe('error');
    expect(lost.payload).toMatchObject([{ extensions: { code: 'EVENTS_LOST' } }]);
    expect(lost.payload[0].message).toMatch(/^events were lost .*: load the list again and subscribe again$/);

    const again = await subscribe('subscription { conversationEvents { kind number conversation { name } } }');
    await fresh
      .db(DATABASE)
      .collection('conversations')
      .insertOne({ userId: 1, id: 5, name: 'After the restart', model: 'gpt-4o', enableWeb: false, messages: [] });
    expect((await again.next()).payload).toEqual({
      data: { conversationEvents: { kind: 'CREATED', number: 5, conversation: { name: 'After the restart' } } },
    });
    const metrics = await scrapeMetrics(service.url);
    expect(sample(metrics, 'mongodb_change_stream_restarts_total', { collection: 'users', resumed: 'false' })).toBe(1);
    await fresh.close();
  });
});
