/**
 * What WebSocket clients that never read what they are sent cost a gateway: each attack runs
 * against a fresh gateway process (embedded engine, demo data), and the gateway's resident set
 * size is read from /proc before, at its highest during, and after the attack.
 *
 *   npx tsx test/bench/websocket-attacks.ts [--main dist/main.js] [--only NAME,…]
 *
 * `--main` runs another build of the gateway (e.g. one of an earlier commit); environment
 * variables given to this script (RATE_LIMIT, WEBSOCKET_MAX_BUFFERED_BYTES, …) reach the gateway.
 */
import { setTimeout as sleep } from 'node:timers/promises';

import WebSocket from 'ws';

import { type Child, freePort, runAttacks, startNode, waitForOutput } from './processes.js';

/** A graphql-ws ping as the attacker sends it: a 90 kB payload, echoed back in the pong. */
const BIG_PING = JSON.stringify({ type: 'ping', payload: { filler: 'x'.repeat(90_000) } });
const SMALL_PING = JSON.stringify({ type: 'ping' });
/** Data the attacking client lets its own library hold before waiting: it sends as fast as the server reads. */
const CLIENT_BACKLOG_BYTES = 4 * 1024 * 1024;
const MB = 1024 * 1024;
/** How long each socket stays open, not reading, once it has sent all it sends. */
const HOLD_MS = 2_000;

interface Attack {
  name: string;
  what: string;
  /** Client addresses, one socket each (127.0.0.0/8 all reach the loopback). */
  addresses: string[];
  /** Sends connection_init (the demo user's token) and waits for the ack before it stops reading. */
  init: boolean;
  ping: string;
  durationMs: number;
  /** Stops once this much is sent (per socket). */
  maxBytes?: number;
  /** Sends an unsolicited WebSocket pong every second (which a keep-alive may take for an answer). */
  pongs?: boolean;
}

const ATTACKS: Attack[] = [
  {
    name: 'ping_flood_before_init',
    what: 'one socket, no connection_init, 90 kB pings for 2.8 s (inside the 3 s init window)',
    addresses: ['127.0.0.1'],
    init: false,
    ping: BIG_PING,
    durationMs: 2_800,
  },
  {
    name: 'ping_flood_after_init',
    what: 'one authenticated socket, 90 kB pings, up to 300 MB or 10 s',
    addresses: ['127.0.0.1'],
    init: true,
    ping: BIG_PING,
    durationMs: 10_000,
    maxBytes: 300 * MB,
  },
  {
    name: 'ping_flood_with_pongs',
    what: 'one authenticated socket, 90 kB pings and an unsolicited pong each second, for 45 s',
    addresses: ['127.0.0.1'],
    init: true,
    ping: BIG_PING,
    durationMs: 45_000,
    pongs: true,
  },
  {
    name: 'four_addresses',
    what: 'four sockets from four addresses, no connection_init, 90 kB pings for 2.8 s',
    addresses: ['127.0.0.1', '127.0.0.2', '127.0.0.3', '127.0.0.4'],
    init: false,
    ping: BIG_PING,
    durationMs: 2_800,
  },
  {
    name: 'small_ping_flood',
    what: 'one authenticated socket, empty pings (16 bytes each, echoed as 16) for 10 s',
    addresses: ['127.0.0.1'],
    init: true,
    ping: SMALL_PING,
    durationMs: 10_000,
  },
];

interface Outcome {
  attack: string;
  rss_mb_before: number;
  rss_mb_peak: number;
  rss_mb_after: number;
  sent_mb: number;
  /** How the server ended the sockets (close code, or 1006 for a dropped connection), and after how long. */
  closed: string;
  console_errors: number;
  /** Whether the gateway survived the attack. */
  gateway: string;
}

async function run(attack: Attack, main: string): Promise<Outcome> {
  const port = await freePort();
  const gateway = startNode('gateway', [main], { env: { PORT: String(port), HOST: '0.0.0.0', JWT_SECRET: '', MONGODB_URI: '' } });
  const consoleErrors = countConsoleErrors(gateway);
  try {
    const token = (await waitForOutput(gateway, /"demoToken":"([^"]+)"/))[1]!;
    const url = `ws://127.0.0.1:${port}/graphql`;
    await sleep(1_000);
    const before = gateway.rss();
    let peak = before;
    // Once the gateway is gone (killed for its memory), /proc has nothing to read: its last figure stays.
    const sample = () => (peak = Math.max(peak, gateway.rss() || 0));
    const sampler = setInterval(sample, 50);
    const started = performance.now();
    const results = await Promise.all(attack.addresses.map((address) => flood(url, address, token, attack, started)));
    clearInterval(sampler);
    await sleep(1_000);
    sample();
    const { exitCode, signalCode } = gateway.process;
    return {
      attack: attack.name,
      rss_mb_before: round(before / MB),
      rss_mb_peak: round(peak / MB),
      rss_mb_after: round(gateway.rss() / MB),
      sent_mb: round(results.reduce((sum, result) => sum + result.sentBytes, 0) / MB),
      closed: results.map((result) => result.closed).join(', '),
      console_errors: consoleErrors(),
      gateway: exitCode === null && signalCode === null ? 'running' : `exited (${signalCode ?? exitCode})`,
    };
  } finally {
    await gateway.stop();
  }
}

/** One attacking socket: opens, optionally authenticates, stops reading, then sends until told to stop or cut off. */
async function flood(url: string, address: string, token: string, attack: Attack, started: number) {
  const socket = new WebSocket(url, 'graphql-transport-ws', { localAddress: address });
  let closed = 'still open';
  socket.on('close', (code) => (closed = `${code} after ${round((performance.now() - started) / 1000)} s`));
  socket.on('error', () => {});
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  if (attack.init) {
    const acknowledged = new Promise((resolve) => socket.once('message', resolve));
    socket.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: `Bearer ${token}` } }));
    await acknowledged;
  }
  socket.pause();
  let sentBytes = 0;
  let lastPong = performance.now();
  const deadline = performance.now() + attack.durationMs;
  while (performance.now() < deadline && socket.readyState === WebSocket.OPEN && sentBytes < (attack.maxBytes ?? Infinity)) {
    if (attack.pongs && performance.now() - lastPong >= 1_000) {
      socket.pong();
      lastPong = performance.now();
    }
    if (socket.bufferedAmount > CLIENT_BACKLOG_BYTES) {
      await sleep(1);
      continue;
    }
    socket.send(attack.ping);
    sentBytes += attack.ping.length;
    // Lets the event loop write (and notice a close) every so often.
    if (sentBytes % (64 * attack.ping.length) === 0) await sleep(0);
  }
  // Still not reading: whatever the server holds for it, it holds now.
  await sleep(HOLD_MS);
  socket.terminate();
  return { sentBytes, closed };
}

const CONSOLE_ERROR = 'Internal error occurred during message handling';

/** Counts the entries graphql-ws writes to the console for each message it failed to handle. */
function countConsoleErrors(gateway: Child): () => number {
  let count = 0;
  let tail = '';
  gateway.process.stderr!.on('data', (chunk: Buffer) => {
    const text = tail + chunk.toString();
    count += text.split(CONSOLE_ERROR).length - 1;
    tail = text.slice(-(CONSOLE_ERROR.length - 1));
  });
  return () => count;
}

const round = (value: number) => Math.round(value * 10) / 10;

await runAttacks(ATTACKS, run);
