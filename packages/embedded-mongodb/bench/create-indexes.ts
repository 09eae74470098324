/**
 * createIndexes cost: the wall time of building an index over N conversations,
 * and of asking again for the index once it exists (what every Mongoose
 * process does at start), as the median of several runs.
 *
 *   npx tsx bench/create-indexes.ts [--docs 1000,100000] [--runs 5] [--uri URI]
 *
 * Without --uri it starts an embedded engine in this process; with --uri it
 * measures that server instead, for comparison.
 */
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';

import { type Db, type Document, MongoClient } from 'mongodb';

import { startEmbeddedServer } from '../src/index.js';

const USAGE = 'Usage: npx tsx bench/create-indexes.ts [--docs 1000,100000] [--runs 5] [--uri URI]';
const INDEX = { key: { userId: 1, id: -1 }, name: 'userId_1_id_-1', unique: true };

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** A conversation as the gateway stores it, with a few messages. */
function conversation(i: number): Document {
  const at = new Date(1_700_000_000_000 + i * 1000);
  return {
    userId: i % 5000,
    id: i,
    name: `Conversation ${i}`,
    model: 'gpt-4o',
    enableWeb: false,
    messages: Array.from({ length: 4 }, (_, m) => ({ role: m % 2 ? 'assistant' : 'user', content: `message ${m} `.repeat(20) })),
    createdAt: at,
    updatedAt: at,
  };
}

async function timed(work: () => Promise<Document>): Promise<{ ms: number; reply: Document }> {
  const started = performance.now();
  const reply = await work();
  return { ms: performance.now() - started, reply };
}

async function measure(db: Db, docs: number, runs: number): Promise<void> {
  const collection = db.collection(`conversations_${docs}`);
  await collection.drop().catch(() => undefined);
  for (let from = 0; from < docs; from += 10_000) {
    await collection.insertMany(Array.from({ length: Math.min(10_000, docs - from) }, (_, i) => conversation(from + i)));
  }
  const create = () => db.command({ createIndexes: collection.collectionName, indexes: [INDEX] });
  const builds: number[] = [];
  const existing: number[] = [];
  let note: unknown;
  for (let run = 0; run < runs; run++) {
    if (run > 0) await collection.dropIndex(INDEX.name);
    builds.push((await timed(create)).ms);
    const again = await timed(create);
    existing.push(again.ms);
    note = again.reply.note;
  }
  const format = (values: number[]): string =>
    `median ${median(values).toFixed(1)} ms  (runs: ${values.map((ms) => ms.toFixed(1)).join(', ')})`;
  console.log(`${docs} documents`);
  console.log(`  first-time build        ${format(builds)}`);
  console.log(`  index already exists    ${format(existing)}  note: ${JSON.stringify(note)}`);
  await collection.drop();
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      docs: { type: 'string', default: '1000,100000' },
      runs: { type: 'string', default: '5' },
      uri: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const sizes = values.docs.split(',').map(Number);
  const runs = Number(values.runs);
  if (sizes.some((n) => !Number.isInteger(n) || n < 1) || !Number.isInteger(runs) || runs < 1) {
    throw new Error(`--docs takes positive integers and --runs a positive integer (see --help)`);
  }
  const server = values.uri ? undefined : await startEmbeddedServer();
  const client = await MongoClient.connect(values.uri ?? server!.uri);
  try {
    console.log(`createIndexes of ${JSON.stringify(INDEX.key)} on ${values.uri ?? 'the embedded engine (in process)'}, ${runs} runs:`);
    for (const docs of sizes) await measure(client.db('bench_create_indexes'), docs, runs);
  } finally {
    await client.close();
    await server?.close();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
