import type { ApolloServerPlugin } from '@apollo/server';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import type { RequestContext } from '../../src/context.js';
import { startTestDatabase, type TestDatabase } from '../support/database.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';

/** What keeps this process busy now, by kind (timers, servers, sockets, …), as Node reports it. */
function activeResources(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const kind of process.getActiveResourcesInfo()) counts[kind] = (counts[kind] ?? 0) + 1;
  return counts;
}

/** Waits for the resources a close let go of to leave Node's list (a closed socket goes on the next turns). */
async function settledResources(): Promise<Record<string, number>> {
  for (let turn = 0; turn < 20; turn += 1) await new Promise((resolve) => setTimeout(resolve, 25));
  return activeResources();
}

describe('a start that fails once everything but the port is open', () => {
  let database: TestDatabase;
  let holder: TestGateway;

  beforeAll(async () => {
    database = await startTestDatabase();
    holder = await startTestGateway({}, { database });
  });
  afterAll(async () => {
    await holder?.stop();
    await database?.stop();
  });

  it('fails with the port in one sentence and leaves nothing running: Apollo Server stopped, no interval, server, socket or connection', async () => {
    const port = new URL(holder.url).port;
    const apollo: string[] = [];
    const watching: ApolloServerPlugin<RequestContext> = {
      async serverWillStart() {
        apollo.push('started');
        return { serverWillStop: async () => void apollo.push('stopped') };
      },
    };
    // Intervals are unref'd (they keep no process alive, and Node's list of resources leaves them out): each must be cleared.
    const setInterval = vi.spyOn(globalThis, 'setInterval');
    const clearInterval = vi.spyOn(globalThis, 'clearInterval');
    const before = await settledResources();
    try {
      await expect(startTestGateway({ PORT: port }, { database, apolloPlugins: [watching] })).rejects.toThrow(
        `port ${port} on 127.0.0.1 is already in use`,
      );
      const cleared = new Set(clearInterval.mock.calls.map(([interval]) => interval));
      expect(setInterval.mock.results.filter(({ value }) => !cleared.has(value as NodeJS.Timeout))).toEqual([]);
    } finally {
      setInterval.mockRestore();
      clearInterval.mockRestore();
    }
    expect(apollo).toEqual(['started', 'stopped']);
    expect(await settledResources()).toEqual(before);
  });
});

describe('stopping', () => {
  it('is safe twice, and leaves nothing running', async () => {
    const database = await startTestDatabase();
    try {
      const before = await settledResources();
      const gateway = await startTestGateway({}, { database });
      await Promise.all([gateway.stop(), gateway.stop()]);
      await gateway.stop();
      expect(await settledResources()).toEqual(before);
    } finally {
      await database.stop();
    }
  });
});
