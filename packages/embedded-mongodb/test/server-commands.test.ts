import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { connect, type Connected, serverError } from './support/connect.js';

let t: Connected;

beforeAll(async () => {
  t = await connect();
});

afterAll(() => t?.stop());

describe('server and session commands', () => {
  it('answers hello as a writable primary the driver accepts', async () => {
    const hello = await t.db.admin().command({ hello: 1 });
    expect(hello).toMatchObject({ ok: 1, isWritablePrimary: true, minWireVersion: 0 });
    expect(hello.maxWireVersion).toBeGreaterThanOrEqual(8);
    expect(hello.maxBsonObjectSize).toBe(16 * 1024 * 1024);
    expect(hello.maxMessageSizeBytes).toBe(48_000_000);
    expect(hello.maxWriteBatchSize).toBeGreaterThanOrEqual(1000);
    expect(typeof hello.logicalSessionTimeoutMinutes).toBe('number');
    expect(typeof hello.connectionId).toBe('number');
  });

  it('answers the legacy isMaster with ismaster: true', async () => {
    const reply = await t.db.admin().command({ isMaster: 1 });
    expect(reply).toMatchObject({ ok: 1, ismaster: true });
  });

  it('answers ping, buildInfo and getParameter', async () => {
    expect(await t.db.command({ ping: 1 })).toMatchObject({ ok: 1 });
    const info = await t.db.admin().command({ buildInfo: 1 });
    expect(info.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(info.versionArray).toHaveLength(4);
    const fcv = await t.db.admin().command({ getParameter: 1, featureCompatibilityVersion: 1 });
    expect(fcv.featureCompatibilityVersion.version).toMatch(/^\d+\.\d+$/);
  });

  it('ends sessions', async () => {
    const session = t.client.startSession();
    await t.collection('sessions').insertOne({ a: 1 }, { session });
    await session.endSession();
    expect(await t.db.admin().command({ endSessions: [] })).toMatchObject({ ok: 1 });
  });

  it('refuses an unknown command with CommandNotFound', async () => {
    const error = await serverError(t.db.command({ frobnicate: 1 }));
    expect(error.code).toBe(59);
    expect(error.codeName).toBe('CommandNotFound');
    expect(error.message).toBe("no such command: 'frobnicate'");
  });

  it('lists and drops databases', async () => {
    const other = t.client.db(`${t.database.dbName}_other`);
    await other.collection('x').insertOne({ a: 1 });
    const names = (await t.db.admin().listDatabases({ nameOnly: true })).databases.map((d) => d.name);
    expect(names).toContain(`${t.database.dbName}_other`);
    await other.dropDatabase();
    const after = (await t.db.admin().listDatabases({ nameOnly: true })).databases.map((d) => d.name);
    expect(after).not.toContain(`${t.database.dbName}_other`);
  });

  it('creates, lists and drops collections', async () => {
    await t.db.createCollection('created');
    const duplicate = await serverError(t.db.command({ create: 'created' }));
    expect(duplicate.code).toBe(48);
    expect(duplicate.codeName).toBe('NamespaceExists');
    const listed = await t.db.listCollections({ name: 'created' }).toArray();
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ name: 'created', type: 'collection' });
    expect(await t.collection('created').drop()).toBe(true);
    expect(await t.db.listCollections({ name: 'created' }).toArray()).toEqual([]);
  });

  it('reports database statistics', async () => {
    await t.collection('stats').insertMany([{ a: 1 }, { a: 2 }, { a: 3 }]);
    const stats = await t.db.stats();
    expect(stats.ok).toBe(1);
    expect(stats.db).toBe(t.database.dbName);
    expect(stats.objects).toBeGreaterThanOrEqual(3);
    expect(stats.dataSize).toBeGreaterThan(0);
  });

  it('creates a collection on first insert', async () => {
    await t.collection('implicit').insertOne({ a: 1 });
    const names = (await t.db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name);
    expect(names).toContain('implicit');
  });
});
