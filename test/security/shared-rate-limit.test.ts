import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { secretKey, signAccessToken } from '../../src/auth/access-token.js';
import { withDatabaseName } from '../../src/db/uri.js';
import { startTestDatabase } from '../support/database.js';
import { startEmbeddedDbProcess } from '../support/embedded-db-process.js';
import { type NodeProcess, spawnNode } from '../support/node-process.js';
import { postGraphql } from './http.js';

const SECRET = 'shared-limits-secret-0123456789';
/** Per caller: 5 a second plus a burst of 10 in any 10 seconds; per instance unless counters are shared. */
const RATE = 5;

/** The most one budget lets through in `seconds`: every steady window begun meanwhile, and the burst. */
const oneBudget = (seconds: number) => RATE * (Math.ceil(seconds) + 1) + 2 * RATE;

let databaseUri: string;
let stopDatabase: () => Promise<void>;
const gateways: NodeProcess[] = [];

/** Gateway processes on the same database, with the given counter store. */
async function startInstances(store: 'mongo' | 'memory'): Promise<string[]> {
  return Promise.all(
    [1, 2].map(async () => {
      const gateway = spawnNode('dist/main.js', [], {
        PORT: '0',
        HOST: '127.0.0.1',
        MONGODB_URI: databaseUri,
        JWT_SECRET: SECRET,
        RATE_LIMIT: String(RATE),
        RATE_LIMIT_STORE: store,
        LOG_LEVEL: 'info',
      });
      gateways.push(gateway);
      const [logLine] = await gateway.waitFor(/^\{.*"msg":"listening".*\}$/m);
      return (JSON.parse(logLine) as { url: string }).url;
    }),
  );
}

/** 30 rounds of one request of one caller at each instance at once; how many each served, and how long it took. */
async function floodBoth(urls: string[], userId: number): Promise<{ served: number[]; seconds: number }> {
  const authorization = `Bearer ${await signAccessToken(secretKey(SECRET), userId)}`;
  const served = urls.map(() => 0);
  const started = performance.now();
  for (let round = 0; round < 30; round += 1) {
    const answers = await Promise.all(urls.map((url) => postGraphql(url, { query: '{ __typename }' }, { authorization })));
    answers.forEach((answer, instance) => {
      expect([200, 429]).toContain(answer.status);
      if (answer.status === 200) served[instance]! += 1;
    });
  }
  return { served, seconds: (performance.now() - started) / 1000 };
}

beforeAll(async () => {
  // The same suite runs on real MongoDB when MONGODB_URI is set; otherwise on one embedded-db process.
  if (process.env.MONGODB_URI) {
    const database = await startTestDatabase();
    [databaseUri, stopDatabase] = [database.uri, database.stop];
  } else {
    const engine = await startEmbeddedDbProcess();
    [databaseUri, stopDatabase] = [withDatabaseName(engine.uri, 'shared_limits'), engine.stop];
  }
});
afterAll(async () => {
  for (const gateway of gateways) {
    if (gateway.child.exitCode === null) {
      gateway.child.kill('SIGTERM');
      await gateway.exited;
    }
  }
  await stopDatabase?.();
});

describe('rate limits across two gateway processes on one database', () => {
  it('with RATE_LIMIT_STORE=mongo, give a caller one budget, whichever instance each request reaches', async () => {
    const { served, seconds } = await floodBoth(await startInstances('mongo'), 7);
    const total = served[0]! + served[1]!;
    expect(served[0]).toBeGreaterThan(0);
    expect(served[1]).toBeGreaterThan(0);
    expect(total).toBeGreaterThanOrEqual(RATE + 2 * RATE);
    expect(total).toBeLessThanOrEqual(oneBudget(seconds));
  });

  it('with counters in memory, give a caller a budget at each instance (what sharing prevents)', async () => {
    const { served } = await floodBoth(await startInstances('memory'), 8);
    for (const count of served) expect(count).toBeGreaterThanOrEqual(RATE + 2 * RATE);
    expect(served[0]! + served[1]!).toBeGreaterThanOrEqual(2 * (RATE + 2 * RATE));
  });
});
