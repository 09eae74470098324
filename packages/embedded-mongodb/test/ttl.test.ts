import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { type EmbeddedServer, startEmbeddedServer } from '../src/index.js';
import type { AnyDocument } from './support/connect.js';

/** The TTL monitor runs on the engine's injectable clock, so time moves without waiting (embedded engine only). */
describe.skipIf(process.env.MONGODB_URI)('TTL indexes', () => {
  let now = Date.parse('2030-01-01T00:00:00Z');
  let server: EmbeddedServer;
  let client: MongoClient;

  beforeAll(async () => {
    server = await startEmbeddedServer({ clock: { now: () => now }, ttlMonitorIntervalMs: 10 });
    client = await MongoClient.connect(server.uri);
  });
  afterAll(async () => {
    await client?.close();
    await server?.close();
  });

  it('delete documents once their date plus expireAfterSeconds has passed, and only those', async () => {
    const sessions = client.db('ttl').collection<AnyDocument>('sessions');
    await sessions.createIndex({ lastSeen: 1 }, { expireAfterSeconds: 3600 });
    await sessions.insertMany([
      { _id: 'old', lastSeen: new Date(now - 2 * 3600_000) },
      { _id: 'earliest-in-array', lastSeen: [new Date(now + 3600_000), new Date(now - 3 * 3600_000)] },
      { _id: 'recent', lastSeen: new Date(now - 60_000) },
      { _id: 'not-a-date', lastSeen: 'yesterday' },
    ]);
    await expect
      .poll(async () => (await sessions.find().sort({ _id: 1 }).toArray()).map((doc) => doc._id))
      .toEqual(['not-a-date', 'recent']);

    now += 3600_000;
    await expect.poll(async () => (await sessions.find().toArray()).map((doc) => doc._id)).toEqual(['not-a-date']);
  });

  it('follow a collMod of expireAfterSeconds', async () => {
    const events = client.db('ttl').collection<AnyDocument>('events');
    await events.createIndex({ at: 1 }, { expireAfterSeconds: 86_400 });
    await events.insertOne({ _id: 1, at: new Date(now - 3600_000) });
    const reply = await client.db('ttl').command({ collMod: 'events', index: { keyPattern: { at: 1 }, expireAfterSeconds: 60 } });
    expect(reply).toMatchObject({ expireAfterSeconds_old: 86_400, expireAfterSeconds_new: 60 });
    await expect.poll(() => events.countDocuments()).toBe(0);
  });

  it('report and change the monitor interval through getParameter and setParameter, as mongod does', async () => {
    const admin = client.db('admin');
    const changed = await admin.command({ setParameter: 1, ttlMonitorSleepSecs: 1 });
    expect(changed.was).toBeCloseTo(0.01);
    expect((await admin.command({ getParameter: 1, ttlMonitorSleepSecs: 1 })).ttlMonitorSleepSecs).toBe(1);
  });
});
