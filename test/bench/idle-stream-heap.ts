import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';

import { MongoClient } from 'mongodb';

import { secretKey, signAccessToken } from '../../src/auth/access-token.js';
import { withDatabaseName } from '../../src/db/uri.js';
import { connectAs, type TestSocket } from '../support/websocket.js';
import { type HttpSubscriber, openInBatches, subscribeOverHttp } from './http-subscribers.js';
import {
  type Child,
  freePort,
  ROOT,
  startEmbeddedEngine,
  startGatewayInMemory,
  startPeer,
  UNCAPPED_LIVE_CONNECTIONS,
  waitForHttp,
  waitForOutput,
} from './processes.js';

/**
 * What an idle subscription holds on the gateway, by kind of object: a gateway process on the
 * in-memory engine (`DATA_DIR=memory`, the demo data's user 1), a heap snapshot with no subscription open
 * (after one opened and closed), another with `--streams` idle subscriptions over `--transport`,
 * and the difference in bytes per subscription, by V8's node type and constructor. (RSS is the
 * subscriptions scenario's: a heap snapshot makes the process grow by itself.)
 *
 *   npx tsx test/bench/idle-stream-heap.ts [--transport sse|multipart|websocket] [--streams N] [--top N] [--query Q] [--keep] [--floor]
 *
 * `--floor` takes the same two snapshots of the live floor (`servers/live-floor.ts`, on an
 * embedded engine of its own, over `websocket` or `sse`) instead: what is left of the gateway's
 * figures once the floor's are taken away is what the gateway's own layers hold.
 *
 * `--query` is the subscription each opens (default: `conversationEvents`; the scale scenario's is
 * `subscription { quota }`). `--keep` leaves the two snapshots in `.bench/` (and says where), for a closer look.
 *
 * Run `npm run build` first: the gateway is `dist/main.js`.
 */

const { values } = parseArgs({
  options: {
    transport: { type: 'string', default: 'sse' },
    streams: { type: 'string', default: '500' },
    top: { type: 'string', default: '25' },
    query: { type: 'string', default: 'subscription { conversationEvents { kind number } }' },
    keep: { type: 'boolean', default: false },
    floor: { type: 'boolean', default: false },
  },
});
const transport = values.transport as 'sse' | 'multipart' | 'websocket';
if (values.floor && transport === 'multipart') throw new Error('the live floor serves websocket and sse only');
const streams = Number(values.streams);
const QUERY = values.query;

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
  nodes: number[];
  strings: string[];
}

/** Self bytes and counts of a snapshot's objects, by node type and name (a constructor, a closure's function, a string...). */
function tally(file: string): Map<string, { bytes: number; count: number }> {
  const { snapshot, nodes, strings } = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  const fields = snapshot.meta.node_fields;
  const types = snapshot.meta.node_types[0];
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((field) => fields.indexOf(field));
  const sums = new Map<string, { bytes: number; count: number }>();
  for (let at = 0; at < nodes.length; at += fields.length) {
    const type = types[nodes[at + typeAt!]!]!;
    const name = type === 'string' || type === 'concatenated string' || type === 'sliced string' ? '' : strings[nodes[at + nameAt!]!]!;
    const key = `${type} ${name.slice(0, 60)}`;
    const sum = sums.get(key) ?? { bytes: 0, count: 0 };
    sum.bytes += nodes[at + sizeAt!]!;
    sum.count += 1;
    sums.set(key, sum);
  }
  return sums;
}

const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const jwtSecret = randomBytes(24).toString('base64url');
const directory = join(ROOT, '.bench', `heap-${process.pid}`);
mkdirSync(directory, { recursive: true });
const nodeOptions = ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${directory}`];
/** What the tool started, stopped in reverse order however it ends. */
const children: Child[] = [];

async function startFloor(): Promise<Child> {
  const { server } = await startEmbeddedEngine(children);
  const uri = withDatabaseName(server, 'idle_stream_heap');
  const client = await MongoClient.connect(uri);
  await client.db().collection('users').insertOne({ id: 1, username: 'heap', balanceMicros: 0, lastConversationId: 0 });
  await client.close();
  const floor = startPeer('live_floor', { port, uri, jwtSecret, nodeOptions });
  children.push(floor);
  await waitForOutput(floor, /listening/);
  return floor;
}

const open: (HttpSubscriber | TestSocket)[] = [];
try {
  /** The server measured: the gateway on its in-memory engine, or the floor on an engine of its own. */
  const measured = values.floor
    ? await startFloor()
    : startGatewayInMemory('gateway', { port, jwtSecret, nodeOptions }, UNCAPPED_LIVE_CONNECTIONS);
  if (!values.floor) {
    children.push(measured);
    await waitForHttp(measured, `${base}/healthz`);
  }
  const authorization = `Bearer ${await signAccessToken(secretKey(jwtSecret), 1)}`;
  const subscribe = async () => {
    if (transport !== 'websocket') return subscribeOverHttp(base, transport, authorization, QUERY);
    const socket = await connectAs(base, authorization);
    socket.subscribe(QUERY);
    return socket;
  };
  const running = async () => ((await (await fetch(`${base}/readyz`)).json()) as { subscriptions: number }).subscriptions;
  // The floor counts nothing: the snapshot's 2 s wait lets the opened ones get their first event and the closed ones go.
  const until = async (count: number) => {
    while (!values.floor && (await running()) !== count) await sleep(100);
  };
  const closeAll = async () => {
    for (const subscriber of open.splice(0)) {
      if ('socket' in subscriber) await subscriber.close();
      else subscriber.close();
    }
    await until(0);
  };
  const snapshot = async () => {
    await sleep(2_000);
    const before = new Set(readdirSync(directory, { withFileTypes: false }).map(String));
    measured.process.kill('SIGUSR2');
    let file: string | undefined;
    while (file === undefined) {
      await sleep(500);
      const written = readdirSync(directory).filter((name) => name.endsWith('.heapsnapshot') && !before.has(name));
      // Written once its size stops growing.
      if (written.length === 1) {
        const path = join(directory, written[0]!);
        const size = readFileSync(path).length;
        await sleep(1_000);
        if (size > 0 && readFileSync(path).length === size) file = path;
      }
    }
    return file;
  };
  for (let index = 0; index < 10; index++) open.push(await subscribe());
  await until(10);
  await closeAll();
  const empty = await snapshot();
  open.push(...(await openInBatches(streams, subscribe, 50)));
  await until(streams);
  const full = await snapshot();
  const [was, is] = [tally(empty), tally(full)];
  const rows = [...is]
    .map(([key, { bytes, count }]) => ({ key, bytes: bytes - (was.get(key)?.bytes ?? 0), count: count - (was.get(key)?.count ?? 0) }))
    .sort((a, b) => b.bytes - a.bytes);
  const total = rows.reduce((sum, row) => sum + row.bytes, 0);
  process.stdout.write(
    `${values.floor ? 'floor' : 'gateway'}, ${transport}: ${streams} idle subscriptions: ${(total / streams).toFixed(0)} B of heap (snapshot) per subscription\n`,
  );
  for (const row of rows.slice(0, Number(values.top))) {
    process.stdout.write(
      `  ${(row.bytes / streams).toFixed(0).padStart(7)} B  ${(row.count / streams).toFixed(2).padStart(6)}×  ${row.key}\n`,
    );
  }
} finally {
  for (const subscriber of open) {
    if ('socket' in subscriber) subscriber.socket.terminate();
    else subscriber.close();
  }
  for (const child of children.reverse()) await child.stop();
  if (values.keep) process.stdout.write(`snapshots kept in ${directory}\n`);
  else rmSync(directory, { recursive: true, force: true });
}
