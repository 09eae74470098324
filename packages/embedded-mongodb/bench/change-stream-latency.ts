/**
 * Change-stream latency: the time from starting a write to receiving its
 * change event, measured over one change stream (its own connection) while
 * another connection writes, one write at a time.
 *
 *   npm run bench -w @chat-gateway/embedded-mongodb -- [--writes N] [--uri URI]
 *
 * Without --uri it starts an embedded engine in this process; with --uri it
 * measures that server (a replica set member) instead, for comparison.
 */
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';

import { type ChangeStreamInsertDocument, type Document, MongoClient } from 'mongodb';

import { startEmbeddedServer } from '../src/index.js';

const USAGE = 'Usage: npm run bench -w @chat-gateway/embedded-mongodb -- [--writes N] [--uri URI]';

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { writes: { type: 'string', default: '2000' }, uri: { type: 'string' }, help: { type: 'boolean' } },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const writes = Number(values.writes);
  if (!Number.isInteger(writes) || writes < 10) throw new Error(`--writes must be an integer of at least 10 (see --help)`);

  const server = values.uri ? undefined : await startEmbeddedServer();
  const uri = values.uri ?? server!.uri;
  const watcher = await MongoClient.connect(uri, { maxPoolSize: 1 });
  const writer = await MongoClient.connect(uri, { maxPoolSize: 1 });
  const collection = writer.db('bench_change_streams').collection<Document>('events');
  await collection.drop().catch(() => undefined);
  const stream = watcher
    .db('bench_change_streams')
    .collection('events')
    .watch<Document, ChangeStreamInsertDocument>([{ $match: { operationType: 'insert' } }]);
  const latencies: number[] = [];
  try {
    await stream.tryNext();
    const warmUp = Math.min(200, Math.floor(writes / 10));
    for (let i = 0; i < warmUp + writes; i++) {
      const started = performance.now();
      const arrived = stream.next();
      await collection.insertOne({ i, payload: 'x'.repeat(200) });
      const change = await arrived;
      if (change.fullDocument.i !== i) throw new Error(`event ${String(change.fullDocument.i)} arrived for write ${i}`);
      if (i >= warmUp) latencies.push(performance.now() - started);
    }
  } finally {
    await stream.close();
    await collection.drop().catch(() => undefined);
    await watcher.close();
    await writer.close();
    await server?.close();
  }
  latencies.sort((a, b) => a - b);
  const format = (ms: number): string => `${ms.toFixed(2)} ms`;
  console.log(
    `change stream latency, write start to event, ${writes} sequential inserts on ${values.uri ? uri : 'the embedded engine (in process)'}:`,
  );
  console.log(
    `  median ${format(percentile(latencies, 50))}   p99 ${format(percentile(latencies, 99))}   max ${format(latencies[latencies.length - 1]!)}`,
  );
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
