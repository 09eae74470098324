import { randomBytes } from 'node:crypto';

import { type Db, type Document, MongoClient } from 'mongodb';

import { mongodbUri, mongodbUriParts } from '../../src/db/uri.js';
import { startTestDatabase, type TestDatabase } from './database.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';

/**
 * Database faults as MongoDB's own drivers test them: mongod's `failCommand` fail point (a test
 * command, on the embedded engine or on a replica set started with `--setParameter
 * enableTestCommands=1`), and a TCP proxy that loses a reply after the server acted on the
 * command. The gateway connects through the proxy under an application name of its own, and
 * every fail point is set for that name only: the test's own client, which seeds and checks,
 * is never hit.
 */

/** How the test's own client introduces itself: no fail point ever names it. */
const TEST_CLIENT_APP_NAME = 'chat-gateway-fault-tests';

/** mongod's fail point modes. */
export type FailPointMode = 'alwaysOn' | { times: number } | { skip: number } | { activationProbability: number };

type FailPointName = 'failCommand' | 'failGetMoreAfterCursorCheckout';

export interface FaultDatabase {
  /** The test database (its `uri` for another gateway or the test's own clients). */
  database: TestDatabase;
  /** The gateway's connection string: through `proxy`, straight to the primary, introduced as `appName`. */
  gatewayUri: string;
  appName: string;
  proxy: TcpProxy;
  /** The test database on the test's own client: seeding and checking, never hit by a fault. */
  db: Db;
  /** Sets mongod's `failCommand` for the gateway's connections (the data's `appName` is theirs). */
  failCommand(mode: FailPointMode, data: Document): Promise<void>;
  /** Sets mongod's `failGetMoreAfterCursorCheckout` (a getMore fails once its cursor is found) for the gateway's connections. */
  failGetMoreAfterCursorCheckout(mode: FailPointMode, data: Document): Promise<void>;
  /** Turns every fail point off and relays every reply again; answers how many times each fail point fired since it was last set. */
  off(): Promise<Record<FailPointName, number>>;
  stop(): Promise<void>;
}

/**
 * Why the fault tests cannot run here, or undefined when they can: always on the embedded engine;
 * with MONGODB_URI, when it names a replica set (retryable writes and change streams) with
 * test commands enabled, reachable without TLS (the proxy reads the commands it relays).
 */
export async function faultTestsUnavailable(): Promise<string | undefined> {
  const external = process.env.MONGODB_URI;
  if (!external) return undefined;
  const parts = mongodbUriParts(external);
  if (parts.scheme !== 'mongodb://') return 'fault tests need a mongodb:// connection string (they reach the primary through a proxy)';
  if (['tls', 'ssl'].some((option) => optionOf(parts.options, option) === 'true')) return 'fault tests need a connection without TLS';
  const client = await MongoClient.connect(external);
  try {
    const hello = await client.db('admin').command({ hello: 1 });
    if (typeof hello.setName !== 'string') return 'fault tests need a replica set (retryable writes, change streams)';
    const answer = await client
      .db('admin')
      .command({ configureFailPoint: 'failCommand', mode: 'off' })
      .catch((error: Error) => error);
    if (answer instanceof Error) {
      return `fault tests need test commands (mongod --setParameter enableTestCommands=1): ${answer.message}`;
    }
    return undefined;
  } finally {
    await client.close();
  }
}

/**
 * A fresh test database with test commands (or `database`, which `stop` then stops), a proxy in
 * front of its primary, and the test's own client.
 */
export async function startFaultDatabase(given: { database?: TestDatabase } = {}): Promise<FaultDatabase> {
  const database = given.database ?? (await startTestDatabase({ enableTestCommands: true }));
  const appName = `chat-gateway-under-test-${randomBytes(4).toString('hex')}`;
  const client = await MongoClient.connect(database.uri, { appName: TEST_CLIENT_APP_NAME });
  const admin = client.db('admin');
  const hello = await admin.command({ hello: 1 });
  const proxy = await startTcpProxy(hostAndPort(String(hello.primary ?? hello.me ?? mongodbUriParts(database.uri).hosts)));

  const parts = mongodbUriParts(database.uri);
  const options = new URLSearchParams([...parts.options].filter(([key]) => !['replicaset', 'appname'].includes(key.toLowerCase())));
  options.set('directConnection', 'true');
  options.set('appName', appName);
  const gatewayUri = mongodbUri({ ...parts, hosts: `127.0.0.1:${proxy.port}`, options });

  const configure = async (name: FailPointName, mode: FailPointMode | 'off', data?: Document): Promise<number> => {
    const answer = await admin.command({ configureFailPoint: name, mode, ...(data && { data: { ...data, appName } }) });
    return Number(answer.count);
  };
  // mongod counts each fail point's firings since it started: what a test caused is the difference.
  const countsAtSet: Record<FailPointName, number> = {
    failCommand: await configure('failCommand', 'off'),
    failGetMoreAfterCursorCheckout: await configure('failGetMoreAfterCursorCheckout', 'off'),
  };
  const set = (name: FailPointName) => async (mode: FailPointMode, data: Document) => {
    countsAtSet[name] = await configure(name, mode, data);
  };
  return {
    database,
    gatewayUri,
    appName,
    proxy,
    db: client.db(database.dbName),
    failCommand: set('failCommand'),
    failGetMoreAfterCursorCheckout: set('failGetMoreAfterCursorCheckout'),
    async off() {
      proxy.relayAll();
      const fired = { failCommand: 0, failGetMoreAfterCursorCheckout: 0 };
      for (const name of ['failCommand', 'failGetMoreAfterCursorCheckout'] as const) {
        const count = await configure(name, 'off');
        fired[name] = count - countsAtSet[name];
        countsAtSet[name] = count;
      }
      return fired;
    },
    async stop() {
      await client.close();
      await proxy.close();
      await database.stop();
    },
  };
}

function optionOf(options: URLSearchParams, name: string): string | undefined {
  for (const [key, value] of options) if (key.toLowerCase() === name) return value;
  return undefined;
}

/** `host:port` (or `[v6]:port`) as the proxy's target. */
function hostAndPort(address: string): { host: string; port: number } {
  const colon = address.lastIndexOf(':');
  return { host: address.slice(0, colon).replace(/^\[(.*)\]$/, '$1'), port: Number(address.slice(colon + 1)) };
}

/** A fault suite's title, which says why it was skipped when `faultTestsUnavailable` gave a reason. */
export function faultSuiteTitle(title: string, unavailable: string | undefined): string {
  return unavailable === undefined ? title : `${title} (skipped: ${unavailable})`;
}
