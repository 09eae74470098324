/**
 * The import's benchmark: a Chat Nio database of 1 000 users and 100 000 conversations (the
 * benchmark's quick data set, with Chat Nio's columns), on SQLite and on a private MariaDB
 * server, moved by `npm run import` into an `npm run embedded-db` process; then moved again
 * (everything there already). Prints, per engine and run, the time, the rows per second and the
 * importer's peak resident memory.
 *
 *   npx tsc -b tsconfig.build.json && npx tsx test/bench/import.ts [--engine sqlite|mariadb] [--conversations N]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';

import { createChatNioOnMariaDb, createChatNioOnSqlite, goJson, type Insert } from '../support/chat-nio.js';
import { skipsMariaDbTest, startPrivateMariaDb } from '../support/mariadb.js';
import { seededRandom } from '../support/random.js';
import { conversationCounts, conversationDocument, QUICK_DATASET, userDocument } from './dataset.js';
import { type Child, freePort, startNode, waitForOutput } from './processes.js';

type Engine = 'sqlite' | 'mariadb';

/** Chat Nio's rows for the data set: each user with a six-decimal balance, an API key, some a gift; then the conversations. */
function* chatNioRows(conversations: number, engine: Engine): Generator<Insert> {
  const counts = conversationCounts({ users: QUICK_DATASET.users, conversations });
  const next = seededRandom(2_024);
  const users = counts.map((_count, index) => userDocument(index + 1, 0));
  for (const { id, username } of users) {
    yield { table: 'auth', columns: ['id', 'username', 'token', 'password'], values: [id, username, `token-${id}`, 'f'.repeat(64)] };
  }
  for (const { id } of users) {
    const micros = Math.floor(next() * 1_000_000_000);
    const text = `${Math.floor(micros / 1e6)}.${String(micros % 1e6).padStart(6, '0')}`;
    // Chat Nio on SQLite stores the float32 its Go code passes.
    yield {
      table: 'quota',
      columns: ['user_id', 'quota', 'used'],
      values: [id, engine === 'sqlite' ? Math.fround(Number(text)) : text, 0],
    };
  }
  for (const { id } of users) {
    yield { table: 'apikey', columns: ['user_id', 'api_key'], values: [id, `sk-${id.toString(16).padStart(64, '0')}`] };
  }
  for (const { id } of users.filter((_user, index) => index % 3 === 0)) {
    yield { table: 'package', columns: ['user_id', 'type'], values: [id, 'cert'] };
  }
  for (const [index, count] of counts.entries()) {
    for (let id = 1; id <= count; id++) {
      const { name, model, messages } = conversationDocument(index + 1, id);
      yield {
        table: 'conversation',
        columns: ['user_id', 'conversation_id', 'conversation_name', 'data', 'model'],
        values: [index + 1, id, name, goJson(messages), model],
      };
    }
  }
}

interface Measured {
  seconds: number;
  rowsPerSecond: number;
  conversationsPerSecond: number;
  peakRssMiB: number;
  summary: string;
}

/** Runs the built import to its end, sampling its peak memory (`VmHWM`, which only grows) as it goes. */
async function measureImport(from: string, mongodbUri: string): Promise<Measured> {
  const started = performance.now();
  const importer: Child = startNode('import', ['dist/cli/import.js', '--from', from], { env: { MONGODB_URI: mongodbUri } });
  let peak = 0;
  while (importer.process.exitCode === null) {
    peak = Math.max(peak, importer.peakRss() || 0);
    await sleep(50);
  }
  const seconds = (performance.now() - started) / 1000;
  if (importer.process.exitCode !== 0) throw new Error(`the import failed:\n${importer.output()}`);
  const output = importer.output();
  const rows = [...output.matchAll(/^(auth|quota|apikey|package|conversation)\s+(\d+)/gm)].reduce(
    (sum, match) => sum + Number(match[2]),
    0,
  );
  const conversations = Number(/^conversation\s+(\d+)/m.exec(output)?.[1]);
  return {
    seconds,
    rowsPerSecond: rows / seconds,
    conversationsPerSecond: conversations / seconds,
    peakRssMiB: peak / 1024 / 1024,
    summary: output
      .split('\n')
      .filter((line) => /^(table|auth|quota|apikey|package|conversation|balances)/.test(line))
      .join('\n'),
  };
}

async function benchmark(engine: Engine, conversations: number, directory: string): Promise<void> {
  const mariadb = engine === 'mariadb' ? await startPrivateMariaDb() : undefined;
  const database = await startNode('embedded engine', ['dist/cli/embedded-db.js', '--port', String(await freePort())]);
  try {
    const made = performance.now();
    let from: string;
    if (mariadb === undefined) {
      from = `sqlite:${join(directory, 'chatnio.db')}`;
      createChatNioOnSqlite(from.slice('sqlite:'.length), chatNioRows(conversations, engine));
    } else {
      await createChatNioOnMariaDb(mariadb, 'chatnio', chatNioRows(conversations, engine));
      from = mariadb.url('chatnio');
    }
    console.log(
      `${engine}: Chat Nio database of ${conversations} conversations made in ${((performance.now() - made) / 1000).toFixed(1)} s`,
    );
    const [uri] = await waitForOutput(database, /mongodb:\/\/127\.0\.0\.1:\d+\/\S*/);
    const target = uri.replace('/?', `/import_${engine}?`);
    for (const run of ['first run', 'second run (everything there already)']) {
      const measured = await measureImport(from, target);
      console.log(
        `${engine}, ${run}: ${measured.seconds.toFixed(1)} s, ${Math.round(measured.rowsPerSecond)} rows/s ` +
          `(${Math.round(measured.conversationsPerSecond)} conversations/s), importer peak RSS ${measured.peakRssMiB.toFixed(0)} MiB`,
      );
      console.log(measured.summary);
    }
  } finally {
    await database.stop();
    await mariadb?.stop();
  }
}

const { values } = parseArgs({ options: { engine: { type: 'string' }, conversations: { type: 'string', default: '100000' } } });
const engines: Engine[] = values.engine === undefined ? ['sqlite', 'mariadb'] : [values.engine as Engine];
const directory = await mkdtemp(join(tmpdir(), 'import-bench-'));
try {
  for (const engine of engines) {
    if (engine === 'mariadb' && skipsMariaDbTest('the MariaDB import benchmark')) continue;
    await benchmark(engine, Number(values.conversations), directory);
  }
} finally {
  await rm(directory, { recursive: true, force: true });
}
