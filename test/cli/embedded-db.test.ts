import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { type Document, MongoClient } from 'mongodb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { killIfRunning, type NodeProcess, runNode, spawnNode } from '../support/node-process.js';

let directory: string;
const engines: NodeProcess[] = [];

beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'embedded-db-'));
});

afterEach(async () => {
  for (const engine of engines.splice(0)) await killIfRunning(engine);
  await rm(directory, { recursive: true, force: true });
});

/** `npm run embedded-db -- --port 0 ARGS`, once it printed its connection string. */
async function startEngine(args: string[]): Promise<{ engine: NodeProcess; uri: string }> {
  const engine = spawnNode('dist/cli/embedded-db.js', ['--port', '0', ...args]);
  engines.push(engine);
  const [uri] = await engine.waitFor(/mongodb:\/\/127\.0\.0\.1:\d+\/\?directConnection=true/);
  return { engine, uri };
}

describe('npm run embedded-db', () => {
  it('answers --help with the npm command it is run as', async () => {
    const { code, stdout } = await runNode('dist/cli/embedded-db.js', ['--help']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^Usage: npm run embedded-db -- --port N \[--data-dir DIR\]/);
  });

  it('says in one line that its port is in use, as the gateway does', async () => {
    const taken = createServer().listen(0, '127.0.0.1');
    await once(taken, 'listening');
    const { port } = taken.address() as { port: number };
    try {
      const { code, stdout, stderr } = await runNode('dist/cli/embedded-db.js', ['--port', String(port)]);
      expect(code).toBe(1);
      expect(stdout).toBe('');
      expect(stderr).toBe(`embedded-db: port ${port} on 127.0.0.1 is already in use\n`);
    } finally {
      taken.close();
    }
  });

  it('with --data-dir keeps every acknowledged write and the change history across a SIGKILL, for one process at a time', async () => {
    const dataDir = join(directory, 'data');
    const first = await startEngine(['--data-dir', dataDir]);
    expect(first.engine.stdout()).toContain(`(data kept in ${dataDir})`);
    let client = await MongoClient.connect(first.uri);
    const items = () => client.db('app').collection<Document>('items');
    await items().createIndex({ sku: 1 }, { unique: true });
    const stream = items().watch();
    await stream.tryNext();
    await items().insertOne({ _id: 1 as never, sku: 'a' });
    const token = (await stream.next())._id;
    await Promise.all(Array.from({ length: 20 }, (_, i) => items().insertOne({ _id: (i + 2) as never, sku: `s${i}` })));
    await items().updateOne({ _id: 1 as never }, { $set: { sku: 'b' } });
    await stream.close();

    const second = await runNode('dist/cli/embedded-db.js', ['--port', '0', '--data-dir', dataDir]);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(
      new RegExp(`^embedded-db: data directory ${dataDir} is in use by process ${first.engine.child.pid} \\(lock [^\\n]+\\n$`),
    );

    first.engine.child.kill('SIGKILL');
    await first.engine.exited;
    await client.close().catch(() => undefined);

    const again = await startEngine(['--data-dir', dataDir]);
    client = await MongoClient.connect(again.uri);
    try {
      expect(await items().countDocuments()).toBe(21);
      expect(await items().findOne({ _id: 1 as never })).toEqual({ _id: 1, sku: 'b' });
      await expect(items().insertOne({ _id: 99 as never, sku: 'b' })).rejects.toMatchObject({ code: 11000 });
      const resumed = items().watch([], { resumeAfter: token });
      const events: string[] = [];
      for (let i = 0; i < 21; i++) events.push((await resumed.next()).operationType);
      await resumed.close();
      expect(events).toEqual([...Array.from({ length: 20 }, () => 'insert'), 'update']);
    } finally {
      await client.close();
    }
  });
});
