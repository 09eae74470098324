import { chmod, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { type EmbeddedServer, startEmbeddedServer } from '../src/index.js';

/** A server reachable only through a socket file its owner can open (embedded engine only). */
describe.skipIf(process.env.MONGODB_URI)('listening on a Unix domain socket', () => {
  let directory: string;
  let server: EmbeddedServer;

  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'engine-socket-'));
    await chmod(directory, 0o700);
    server = await startEmbeddedServer({ socketPath: join(directory, 'mongodb.sock') });
  });
  afterAll(async () => {
    await server?.close();
    await rm(directory, { recursive: true, force: true });
  });

  it('creates the socket readable and writable by its owner only', async () => {
    const info = await stat(join(directory, 'mongodb.sock'));
    expect(info.isSocket()).toBe(true);
    expect(info.mode & 0o777).toBe(0o600);
  });

  it('serves the driver at the percent-encoded socket path it announces', async () => {
    expect(server.uri).toBe(`mongodb://${encodeURIComponent(join(directory, 'mongodb.sock'))}/?directConnection=true`);
    const client = await MongoClient.connect(server.uri);
    try {
      await client
        .db('local_only')
        .collection('things')
        .insertOne({ _id: 1 as never, ok: true });
      expect(await client.db('local_only').collection('things').findOne({})).toEqual({ _id: 1, ok: true });
      const hello = await client.db('admin').command({ hello: 1 });
      expect(hello.me).toBe(join(directory, 'mongodb.sock'));
    } finally {
      await client.close();
    }
  });

  it('refuses a socket in a directory others can enter', async () => {
    const open = await mkdtemp(join(tmpdir(), 'engine-open-'));
    try {
      await chmod(open, 0o755);
      await expect(startEmbeddedServer({ socketPath: join(open, 'mongodb.sock') })).rejects.toThrow(/only its owner can access/);
    } finally {
      await rm(open, { recursive: true, force: true });
    }
  });
});
