/**
 * What one keep-alive connection of requests that ask for an upgrade the server does not take
 * (`Upgrade: h2c`, as Java's HttpClient sends on every request) costs a gateway, and how long
 * the gateway stalls when the connection closes. Each count runs against a fresh gateway process
 * (default configuration: embedded engine, demo data, RATE_LIMIT=20); its resident set size is
 * read from /proc before, at its highest while the requests are sent, once all are answered with
 * the connection still open, and after the close.
 *
 *   npx tsx test/bench/upgrade-connection.ts [--main dist/main.js] [--counts 40000,250000] [--batch 1000] [--plain]
 *
 * `--plain` sends the same requests without `Upgrade`, for comparison.
 *
 * After the close, a /healthz is sent on a new connection every 10 ms for a second (and then
 * until one is sent after a whole second): the longest any of them waited is the stall. A probe
 * not answered within `--give-up` seconds is reported as such, and the gateway killed.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';

import { exchange, openConnection, type RawConnection, rawRequest } from '../support/raw-http.js';
import { freePort, startNode, waitForOutput } from './processes.js';

/** The fields Java's HttpClient adds to every http:// request. */
const JAVA_UPGRADE: [string, string][] = [
  ['Connection', 'Upgrade, HTTP2-Settings'],
  ['HTTP2-Settings', 'AAEAAEAAAAIAAAAAAAMAAAAAAAQBAAAAAAUAAEAAAAYABgAA'],
  ['Upgrade', 'h2c'],
];
const MB = 1024 * 1024;
/** How long probes are sent after the close. */
const PROBE_WINDOW_MS = 1_000;
const PROBE_EVERY_MS = 10;

interface Outcome {
  requests: number;
  send_s: number;
  rss_mb_before: number;
  rss_mb_peak_while_sending: number;
  rss_mb_open: number;
  /** The longest a /healthz probe waited after the close, or why one was not answered. */
  healthz_stall_after_close_ms: number | string;
  rss_mb_after_close: number;
  statuses: string;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      main: { type: 'string', default: 'dist/main.js' },
      counts: { type: 'string', default: '40000,250000' },
      batch: { type: 'string', default: '1000' },
      'give-up': { type: 'string', default: '300' },
      plain: { type: 'boolean', default: false },
    },
  });
  const outcomes: Outcome[] = [];
  for (const count of values.counts.split(',').map(Number)) {
    console.error(`${count} requests on one connection (${values.main}${values.plain ? ', without Upgrade' : ''})`);
    const upgrade = values.plain ? [] : JAVA_UPGRADE;
    outcomes.push(await run(values.main, count, upgrade, Number(values.batch), Number(values['give-up']) * 1000));
  }
  console.table(outcomes);
}

async function run(main: string, count: number, upgrade: [string, string][], batch: number, giveUpMs: number): Promise<Outcome> {
  const port = await freePort();
  const gateway = startNode('gateway', [main], { env: { PORT: String(port), HOST: '127.0.0.1', JWT_SECRET: '', MONGODB_URI: '' } });
  try {
    await waitForOutput(gateway, /"demoToken":"([^"]+)"/);
    const url = `http://127.0.0.1:${port}`;
    await sleep(1_000);
    const before = gateway.rss();
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, gateway.rss() || 0)), 50);
    const connection = await openConnection(url);
    const statuses = new Map<number, number>();
    const started = performance.now();
    const request = rawRequest('GET', '/healthz', [['Host', `127.0.0.1:${port}`], ...upgrade]);
    for (let sent = 0; sent < count; sent += batch) {
      const size = Math.min(batch, count - sent);
      const answers = await connection.exchange([request.repeat(size)], size);
      for (const { status } of answers) statuses.set(status, (statuses.get(status) ?? 0) + 1);
      if (answers.length < size) break;
    }
    const sendSeconds = (performance.now() - started) / 1000;
    clearInterval(sampler);
    const open = gateway.rss();
    const stall = await stallAfterClosing(connection, url, giveUpMs);
    await sleep(1_000);
    return {
      requests: count,
      send_s: round(sendSeconds),
      rss_mb_before: round(before / MB),
      rss_mb_peak_while_sending: round(Math.max(peak, open) / MB),
      rss_mb_open: round(open / MB),
      healthz_stall_after_close_ms: typeof stall === 'number' ? round(stall) : stall,
      rss_mb_after_close: round(gateway.rss() / MB),
      statuses: [...statuses].map(([status, times]) => `${status}×${times}`).join(' '),
    };
  } finally {
    // A gateway still stalled takes SIGTERM only once it is done; `stop` kills it after 15 s.
    await gateway.stop();
  }
}

/**
 * Closes `connection` and probes /healthz, each probe on a connection of its own (one opened
 * before a stall would be past the headers timeout after it, and answered 408): the longest a
 * probe waited, or why one was not answered (it waited past `giveUpMs`, or its connection closed).
 */
async function stallAfterClosing(connection: RawConnection, url: string, giveUpMs: number): Promise<number | string> {
  const probe = rawRequest('GET', '/healthz', [['Host', new URL(url).host]]);
  const closedAt = performance.now();
  connection.close();
  let longest = 0;
  for (;;) {
    const sentAt = performance.now();
    const [answer] = await exchange(url, [probe], 1, giveUpMs);
    const waited = performance.now() - sentAt;
    if (answer?.status !== 200) return answer ? `${answer.status} after ${round(waited)} ms` : `none after ${round(waited / 1000)} s`;
    longest = Math.max(longest, waited);
    if (sentAt - closedAt > PROBE_WINDOW_MS) return longest;
    await sleep(PROBE_EVERY_MS);
  }
}

const round = (value: number) => Math.round(value * 10) / 10;

await main();
