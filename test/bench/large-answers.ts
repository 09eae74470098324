/**
 * What an operation asking for a large answer costs a gateway: each case runs against a fresh
 * gateway process (embedded engine, a seed file), whose resident set size is read from /proc
 * before and at its highest (`VmHWM`), while `/healthz` is asked every 50 ms to see whether the
 * process still answers. The caller owns one conversation of 1 MiB (the audit's) and 40 more.
 *
 *   npx tsx test/bench/large-answers.ts [--main dist/main.js] [--only NAME,…]
 *
 * `--main` runs another build of the gateway (e.g. one of an earlier commit); environment
 * variables given to this script (RESPONSE_MAX_BYTES, …) reach the gateway.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';

import { secretKey, signAccessToken } from '../../src/auth/access-token.js';
import { toGlobalId } from '../../src/graphql/global-id.js';
import { freePort, startNode, waitForHttp } from './processes.js';

const MB = 1024 * 1024;
const USER_ID = 1;
const JWT_SECRET = 'a-secret-for-the-large-answers-benchmark';
/** Conversations of 1 MiB each: number 1 is the audit's, the 41 together pass the default limit of 32 MiB. */
const CONVERSATIONS = 41;

interface Case {
  name: string;
  what: string;
  query: string;
  variables?: Record<string, unknown>;
  /** Requests sent at once. */
  parallel: number;
}

const AUDITED_ID = toGlobalId({ type: 'Conversation', userId: USER_ID, number: 1 });
const TWO_LISTS = `query Lists($ids: [ID!]!) {
  a: nodes(ids: $ids) { ... on Conversation { messages { content } } }
  b: nodes(ids: $ids) { ... on Conversation { messages { content } } }
}`;
const REPEATS = { ids: Array.from({ length: 100 }, () => AUDITED_ID) };

const CASES: Case[] = [
  {
    name: 'repeats',
    what: 'the audit: nodes, 2 aliases × the 1 MiB conversation’s id 100 times',
    query: TWO_LISTS,
    variables: REPEATS,
    parallel: 1,
  },
  { name: 'repeats_x4', what: 'the same, four requests at once', query: TWO_LISTS, variables: REPEATS, parallel: 4 },
  {
    name: 'once_each',
    what: 'nodes, 2 aliases × the 1 MiB conversation’s id once',
    query: TWO_LISTS,
    variables: { ids: [AUDITED_ID] },
    parallel: 1,
  },
  {
    name: 'page_41_mib',
    what: 'a page of 41 conversations of 1 MiB with their messages',
    query: '{ conversations(first: 100) { nodes { number messages { content } } } }',
    parallel: 1,
  },
  {
    name: 'page_41_mib_x4',
    what: 'the same, four requests at once',
    query: '{ conversations(first: 100) { nodes { number messages { content } } } }',
    parallel: 4,
  },
  {
    name: 'page_31_mib_x4',
    what: 'a page of 31 conversations of 1 MiB with their messages (under the default limit), four requests at once',
    query: '{ conversations(first: 31) { nodes { number messages { content } } } }',
    parallel: 4,
  },
];

interface Outcome {
  case: string;
  rss_mb_before: number;
  rss_mb_peak: number;
  /** Each answer's HTTP status, and the error code of a refusal. */
  status: string;
  answer_mb: number;
  /** From sending to the end of the slowest answer. */
  seconds: number;
  /** The longest `/healthz` took to answer while the requests ran. */
  healthz_max_ms: number;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { main: { type: 'string', default: 'dist/main.js' }, only: { type: 'string' } } });
  const only = values.only?.split(',');
  const scratch = await mkdtemp(join(tmpdir(), 'large-answers-'));
  try {
    const seedFile = join(scratch, 'seed.json');
    await writeFile(seedFile, JSON.stringify(seed()));
    const outcomes: Outcome[] = [];
    for (const candidate of CASES.filter(({ name }) => only === undefined || only.includes(name))) {
      console.error(`${candidate.name}: ${candidate.what}`);
      outcomes.push(await run(candidate, values.main, seedFile));
    }
    console.table(outcomes);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

function seed() {
  const messages = Array.from({ length: 16 }, (_, index) => ({
    role: index % 2 ? 'assistant' : 'user',
    content: String.fromCharCode(97 + index).repeat(MB / 16),
  }));
  return {
    users: [{ id: USER_ID, username: 'audit', quota: 0 }],
    conversations: Array.from({ length: CONVERSATIONS }, (_, index) => ({
      userId: USER_ID,
      id: index + 1,
      name: `Chat ${index + 1}`,
      model: 'gpt-4o',
      enableWeb: false,
      messages,
    })),
  };
}

async function run(candidate: Case, main: string, seedFile: string): Promise<Outcome> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = { PORT: String(port), HOST: '127.0.0.1', JWT_SECRET, MONGODB_URI: '', SEED_FILE: seedFile, LOG_LEVEL: 'warn' };
  const gateway = startNode('gateway', [main], { env });
  try {
    await waitForHttp(gateway, `${base}/healthz`);
    const token = await signAccessToken(secretKey(JWT_SECRET), USER_ID);
    await sleep(1_000);
    const before = gateway.rss();
    let probing = true;
    let healthzMaxMs = 0;
    const probe = (async () => {
      while (probing) {
        const started = performance.now();
        await (await fetch(`${base}/healthz`)).arrayBuffer();
        healthzMaxMs = Math.max(healthzMaxMs, performance.now() - started);
        await sleep(50);
      }
    })();
    const started = performance.now();
    const answers = await Promise.all(Array.from({ length: candidate.parallel }, () => ask(base, token, candidate)));
    const seconds = (performance.now() - started) / 1000;
    probing = false;
    await probe;
    return {
      case: candidate.name,
      rss_mb_before: round(before / MB),
      rss_mb_peak: round(gateway.peakRss() / MB),
      status: [...new Set(answers.map((answer) => answer.status))].join(', '),
      answer_mb: round(Math.max(...answers.map((answer) => answer.bytes)) / MB),
      seconds: round(seconds),
      healthz_max_ms: Math.round(healthzMaxMs),
    };
  } finally {
    await gateway.stop();
  }
}

async function ask(base: string, token: string, { query, variables }: Case): Promise<{ status: string; bytes: number }> {
  const response = await fetch(`${base}/graphql`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  const body = Buffer.from(await response.arrayBuffer());
  // A refusal is small: its code says which. A large answer's errors, if any, are not looked for.
  const code = body.length < 4096 ? /"code":"([A-Z_]+)"/.exec(body.toString())?.[1] : undefined;
  return { status: code === undefined ? String(response.status) : `${response.status} ${code}`, bytes: body.length };
}

const round = (value: number) => Math.round(value * 10) / 10;

await main();
