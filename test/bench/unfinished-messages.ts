/**
 * What WebSocket messages that are never finished cost a gateway: many sockets each send the
 * start of a message, in one-byte fragments or as one frame trickled a byte at a time, and hold
 * it. Each attack runs against a fresh gateway process (default configuration: embedded engine,
 * demo data, RATE_LIMIT=20, WEBSOCKETS_PER_ADDRESS=100, so the sockets come from several loopback
 * addresses); its resident set size is read from /proc before, at its highest during, and after.
 *
 *   npx tsx test/bench/unfinished-messages.ts [--main dist/main.js] [--only NAME,…]
 *
 * `--main` runs another build of the gateway (e.g. one of an earlier commit).
 */
import type { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

import WebSocket from 'ws';

import { WEBSOCKET_MESSAGE_ASSEMBLY } from '../../src/limits.js';
import { freePort, runAttacks, startNode, waitForOutput } from './processes.js';

const MB = 1024 * 1024;
/** How long the sockets hold their unfinished messages once sent, while the gateway's memory is read. */
const HOLD_MS = 3_000;
/** The message size the gateway allows (BODY_LIMIT_BYTES): a trickled frame announces it. */
const FRAME_PAYLOAD_BYTES = 100 * 1024;

interface Attack {
  name: string;
  what: string;
  /** Client addresses (127.0.0.0/8 all reach the loopback), and sockets from each. */
  addresses: string[];
  socketsPerAddress: number;
  /** Sends connection_init (the demo user's token) and waits for the ack first. */
  init: boolean;
  /** One-byte fragments of one text message, never its last. */
  fragments?: number;
  /** Or: one text frame announcing FRAME_PAYLOAD_BYTES, of which a byte is written a turn, this many at most, for at most `trickleMs`. */
  trickle?: { bytes: number; ms: number };
}

const FOUR_ADDRESSES = ['127.0.0.1', '127.0.0.2', '127.0.0.3', '127.0.0.4'];

const ATTACKS: Attack[] = [
  {
    name: 'idle_sockets',
    what: '400 authenticated sockets from four addresses that send nothing more (what the others are compared with)',
    addresses: FOUR_ADDRESSES,
    socketsPerAddress: 100,
    init: true,
    fragments: 0,
  },
  {
    name: 'fragments_authenticated',
    what: '400 authenticated sockets from four addresses, each 16 000 one-byte fragments of an unfinished message',
    addresses: FOUR_ADDRESSES,
    socketsPerAddress: 100,
    init: true,
    fragments: 16_000,
  },
  {
    name: 'fragments_at_the_bound',
    what: `400 authenticated sockets from four addresses, each ${WEBSOCKET_MESSAGE_ASSEMBLY.fragments} one-byte fragments (the most allowed)`,
    addresses: FOUR_ADDRESSES,
    socketsPerAddress: 100,
    init: true,
    fragments: WEBSOCKET_MESSAGE_ASSEMBLY.fragments,
  },
  {
    name: 'fragments_unauthenticated',
    what: '100 sockets without connection_init, each 16 000 one-byte fragments inside the 3 s init window',
    addresses: ['127.0.0.1'],
    socketsPerAddress: 100,
    init: false,
    fragments: 16_000,
  },
  {
    name: 'trickled_frame',
    what: '400 authenticated sockets from four addresses, each one 100 kB frame of which 1 000 bytes are written, a byte a turn (within 11 s)',
    addresses: FOUR_ADDRESSES,
    socketsPerAddress: 100,
    init: true,
    // Within the 12 s between keep-alive pings: the client cannot answer one in the middle of its frame.
    trickle: { bytes: 1_000, ms: 11_000 },
  },
  {
    name: 'trickled_at_the_bound',
    what: `the same, each frame's first ${WEBSOCKET_MESSAGE_ASSEMBLY.reads - 1} bytes only (in about as many reads: the most allowed)`,
    addresses: FOUR_ADDRESSES,
    socketsPerAddress: 100,
    init: true,
    trickle: { bytes: WEBSOCKET_MESSAGE_ASSEMBLY.reads - 1, ms: 11_000 },
  },
];

interface Outcome {
  attack: string;
  rss_mb_before: number;
  rss_mb_peak: number;
  rss_mb_after: number;
  /** Per socket, what the gateway's memory grew by at its highest. */
  kb_per_socket: number;
  /** Sockets still open when the hold ended, and how the others were closed. */
  open_at_end: number;
  closed: string;
  /** Trickled bytes written per socket. */
  trickled?: number;
}

async function run(attack: Attack, main: string): Promise<Outcome> {
  const port = await freePort();
  const gateway = startNode('gateway', [main], { env: { PORT: String(port), HOST: '0.0.0.0', JWT_SECRET: '', MONGODB_URI: '' } });
  try {
    const token = (await waitForOutput(gateway, /"demoToken":"([^"]+)"/))[1]!;
    const url = `ws://127.0.0.1:${port}/graphql`;
    await sleep(1_000);
    const before = gateway.rss();
    let peak = before;
    const sample = () => (peak = Math.max(peak, gateway.rss() || 0));
    const sampler = setInterval(sample, 50);
    const addresses = attack.addresses.flatMap((address) => Array.from({ length: attack.socketsPerAddress }, () => address));
    const sockets = await Promise.all(addresses.map((address) => open(url, address, attack.init ? token : undefined)));
    const trickled = await (attack.trickle === undefined ? sendFragments(sockets, attack.fragments!) : trickle(sockets, attack.trickle));
    await sleep(HOLD_MS);
    clearInterval(sampler);
    sample();
    const openAtEnd = sockets.filter(({ socket }) => socket.readyState === WebSocket.OPEN).length;
    const closes = new Map<string, number>();
    for (const { closed } of sockets)
      if (closed.code !== undefined) closes.set(String(closed.code), (closes.get(String(closed.code)) ?? 0) + 1);
    for (const { socket } of sockets) socket.terminate();
    await sleep(1_000);
    return {
      attack: attack.name,
      rss_mb_before: round(before / MB),
      rss_mb_peak: round(peak / MB),
      rss_mb_after: round(gateway.rss() / MB),
      kb_per_socket: round((peak - before) / 1024 / sockets.length),
      open_at_end: openAtEnd,
      closed: [...closes].map(([code, count]) => `${code}×${count}`).join(' '),
      ...(trickled === undefined ? {} : { trickled }),
    };
  } finally {
    await gateway.stop();
  }
}

interface Attacker {
  socket: WebSocket;
  closed: { code?: number };
}

/** One socket from `address`; with a token, authenticated (it waits for the ack). */
async function open(url: string, address: string, token: string | undefined): Promise<Attacker> {
  const socket = new WebSocket(url, 'graphql-transport-ws', { localAddress: address });
  const closed: Attacker['closed'] = {};
  socket.on('close', (code) => (closed.code = code));
  socket.on('error', () => {});
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  if (token !== undefined) {
    const acknowledged = new Promise((resolve) => socket.once('message', resolve));
    socket.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: `Bearer ${token}` } }));
    await acknowledged;
  }
  return { socket, closed };
}

/** Each socket sends `count` one-byte fragments of one text message, never its last. */
async function sendFragments(sockets: Attacker[], count: number): Promise<undefined> {
  for (let index = 0; index < count; index += 1) {
    for (const { socket } of sockets) if (socket.readyState === WebSocket.OPEN) socket.send('x', { fin: false });
    // Lets the event loop write every so often.
    if (index % 256 === 255) await sleep(0);
  }
  return undefined;
}

/**
 * Each socket writes the head of one masked text frame announcing FRAME_PAYLOAD_BYTES, then one
 * byte of its payload every turn, so that the gateway reads each byte apart; answers how many
 * bytes each wrote.
 */
async function trickle(sockets: Attacker[], { bytes, ms }: { bytes: number; ms: number }): Promise<number> {
  // FIN and text; masked, with a 64-bit length; a mask key of zeros (the payload goes as written).
  const head = Buffer.alloc(14);
  head[0] = 0x81;
  head[1] = 0x80 | 127;
  head.writeBigUInt64BE(BigInt(FRAME_PAYLOAD_BYTES), 2);
  // The network socket under ws's client: the frame is written by hand, a byte at a time.
  const rawOf = (socket: WebSocket) => (socket as unknown as { _socket: Socket })._socket;
  for (const { socket } of sockets) rawOf(socket).write(head);
  const deadline = performance.now() + ms;
  let written = 0;
  while (performance.now() < deadline && written < Math.min(bytes, FRAME_PAYLOAD_BYTES - 1)) {
    for (const { socket } of sockets) if (socket.readyState === WebSocket.OPEN) rawOf(socket).write('x');
    written += 1;
    await sleep(1);
  }
  return written;
}

const round = (value: number) => Math.round(value * 10) / 10;

await runAttacks(ATTACKS, run);
