import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';

import { MongoClient } from 'mongodb';

import { secretKey, signAccessToken } from '../../src/auth/access-token.js';
import { withDatabaseName } from '../../src/db/uri.js';
import { connectAs } from '../support/websocket.js';
import { openInBatches, subscribeOverHttp } from './http-subscribers.js';
import {
  type Child,
  cpuProfileFlags,
  freePort,
  startEmbeddedEngine,
  startGateway,
  startPeer,
  UNCAPPED_LIVE_CONNECTIONS,
  waitForHttp,
  waitForOutput,
} from './processes.js';
import { summarize } from './subscriptions.js';

/**
 * What one event to many subscribers of one user costs each server in CPU: the gateway over
 * WebSocket, SSE and multipart, and the live floor over WebSocket and SSE
 * (`servers/live-floor.ts`), each with `--subscribers` `quota` subscriptions, on the embedded
 * engine in a process of its own. Each write goes to one server's user, and waits for the event
 * at all its subscribers before the next server's; the servers take turns, `--writes` times. CPU
 * per event is the server's CPU time (`/proc`, 10 ms ticks) over its writes' fan-outs, divided by
 * the writes; latency is from the write's start to each subscriber. A one-off look at where the
 * live-update latency goes, not part of `npm run bench` (its figures are in docs/performance.md):
 *
 *   npm run build && npx tsx test/bench/fan-out-cpu.ts [--subscribers 1000] [--writes 40] [--profile]
 *
 * `--profile` runs each gateway and the floor with `--cpu-prof`; a profile lands in
 * `.bench/profiles/fan-out/<transport or floor>/` (summarise it with `profile-summary.ts`).
 */
const { values } = parseArgs({
  options: {
    subscribers: { type: 'string', default: '1000' },
    writes: { type: 'string', default: '40' },
    profile: { type: 'boolean', default: false },
  },
});
const SUBSCRIBERS = Number(values.subscribers);
const WRITES = Number(values.writes);

type ServerName = 'gateway' | 'gateway_sse' | 'gateway_multipart' | 'floor' | 'floor_sse';
const SERVERS: readonly { name: ServerName; transport: 'websocket' | 'sse' | 'multipart'; floor: boolean }[] = [
  { name: 'gateway', transport: 'websocket', floor: false },
  { name: 'gateway_sse', transport: 'sse', floor: false },
  { name: 'gateway_multipart', transport: 'multipart', floor: false },
  { name: 'floor', transport: 'websocket', floor: true },
  { name: 'floor_sse', transport: 'sse', floor: true },
];
const children: Child[] = [];
const { server } = await startEmbeddedEngine(children);
const uri = withDatabaseName(server, 'fan_out_cpu');
const client = await MongoClient.connect(uri);
try {
  const users = client.db().collection('users');
  await users.insertMany(
    SERVERS.map((_, index) => ({ id: index + 1, username: `fan-${index + 1}`, balanceMicros: 0, lastConversationId: 0 })),
  );
  const jwtSecret = randomBytes(24).toString('base64url');
  const floorPort = await freePort();
  const floor = startPeer('live_floor', {
    port: floorPort,
    uri,
    jwtSecret,
    nodeOptions: values.profile ? cpuProfileFlags('fan-out/floor') : [],
  });
  children.push(floor);
  await waitForOutput(floor, /listening/);
  const running = await Promise.all(
    SERVERS.map(async ({ name, transport, floor: onFloor }, index) => {
      let child = floor;
      let port = floorPort;
      if (!onFloor) {
        port = await freePort();
        const nodeOptions = values.profile ? cpuProfileFlags(`fan-out/${transport}`) : [];
        child = startGateway(`gateway (${transport})`, { port, uri, jwtSecret, nodeOptions }, UNCAPPED_LIVE_CONNECTIONS);
        children.push(child);
        await waitForHttp(child, `http://127.0.0.1:${port}/healthz`);
      }
      return { name, transport, child, base: `http://127.0.0.1:${port}`, userId: index + 1 };
    }),
  );
  const subscribers = new Map<ServerName, { nextTimed(timeoutMs?: number): Promise<{ receivedAt: number }> }[]>();
  for (const { name, transport, base, userId } of running) {
    const authorization = `Bearer ${await signAccessToken(secretKey(jwtSecret), userId)}`;
    const opened = await openInBatches(SUBSCRIBERS, async () =>
      transport === 'websocket'
        ? (await connectAs(base, authorization)).subscribe('subscription { quota }')
        : subscribeOverHttp(base, transport, authorization, 'subscription { quota }'),
    );
    // Each subscription's first event is the balance as it is.
    for (const subscriber of opened) await subscriber.nextTimed(30_000);
    subscribers.set(name, opened);
  }
  await sleep(1_000);
  const cpu = new Map<ServerName, number>(SERVERS.map(({ name }) => [name, 0]));
  const delays = new Map<ServerName, number[]>(SERVERS.map(({ name }) => [name, []]));
  for (let write = 0; write < WRITES; write++) {
    for (const { name, child, userId } of running) {
      const cpuBefore = child.cpuSeconds();
      const started = performance.now();
      await users.updateOne({ id: userId }, { $inc: { balanceMicros: 1_000_000 } });
      const arrivals = await Promise.all(subscribers.get(name)!.map((subscriber) => subscriber.nextTimed(30_000)));
      cpu.set(name, cpu.get(name)! + child.cpuSeconds() - cpuBefore);
      delays.get(name)!.push(...arrivals.map(({ receivedAt }) => receivedAt - started));
    }
  }
  const perEvent = (name: ServerName) => (cpu.get(name)! / WRITES) * 1e3;
  process.stdout.write(`one event to ${SUBSCRIBERS} subscribers of one user, ${WRITES} writes to each server, taking turns:\n`);
  for (const { name } of SERVERS) {
    const { p50_ms, p99_ms } = summarize(SUBSCRIBERS, WRITES, delays.get(name)!);
    process.stdout.write(
      `  ${name.padEnd(18)} CPU ${perEvent(name).toFixed(1).padStart(6)} ms per event` +
        ` (${(perEvent(name) / perEvent('floor')).toFixed(2)}× the WebSocket floor's, ${(perEvent(name) / perEvent('floor_sse')).toFixed(2)}× the SSE floor's)` +
        `   p50 ${p50_ms.toFixed(1)} ms   p99 ${p99_ms.toFixed(1)} ms\n`,
    );
  }
} finally {
  await client.close();
  for (const child of children.reverse()) await child.stop();
}
process.exit(0);
