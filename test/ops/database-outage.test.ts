import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { withDatabaseName } from '../../src/db/uri.js';
import { type EmbeddedDbProcess, startEmbeddedDbProcess } from '../support/embedded-db-process.js';
import { graphql, startTestGateway, type TestGateway } from '../support/gateway.js';
import { sample, scrapeMetrics } from '../support/metrics.js';

const API_KEY = 'sk-outage-0123456789abcdef';
const SEED = {
  users: [{ id: 1, username: 'alice', quota: 12.5, apiKeys: [API_KEY] }],
  conversations: [{ userId: 1, id: 1, name: 'Trip plan', model: 'gpt-4o', enableWeb: false, messages: [] }],
};
const UNAVAILABLE_SENTENCE = 'service temporarily unavailable, try again later';
/** The driver gives up on an unreachable server after 2 s (serverSelectionTimeoutMS); this leaves room for a busy machine. */
const FAIL_WITHIN_MS = 4_000;
/** A frozen server: a read times out after 3 s (socketTimeoutMS) and is retried once, so about 6 s, plus room. */
const FAIL_WHEN_FROZEN_WITHIN_MS = 10_000;
const RECOVER_WITHIN_MS = 5_000;

let database: EmbeddedDbProcess;
let gateway: TestGateway;
let authorization: string;

beforeAll(async () => {
  database = await startEmbeddedDbProcess();
  gateway = await startTestGateway({ MONGODB_URI: withDatabaseName(database.uri, 'outage') });
  await gateway.seed(SEED);
  authorization = `Bearer ${await gateway.token(1)}`;
});
afterAll(async () => {
  await gateway?.stop();
  await database?.stop();
});

async function timed<T>(work: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const started = performance.now();
  const result = await work();
  return { result, ms: Math.round(performance.now() - started) };
}

const rest = async (path: string) => {
  const response = await fetch(`${gateway.url}${path}`, { headers: { authorization } });
  return { status: response.status, text: await response.text() };
};

/** Polls every 100 ms until `check` holds; answers how long that took. */
async function msUntil(check: () => Promise<boolean>, limitMs: number): Promise<number> {
  const started = performance.now();
  while (!(await check())) {
    if (performance.now() - started > limitMs) throw new Error(`not recovered within ${limitMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return Math.round(performance.now() - started);
}

const ready = async () => (await fetch(`${gateway.url}/readyz`)).status === 200;
const quotaAnswers = async () => (await graphql(gateway, '{ quota }', { authorization })).status === 200;

describe('a database that goes away and comes back', () => {
  it('serves normally before the outage', async () => {
    expect((await fetch(`${gateway.url}/readyz`)).status).toBe(200);
    expect(await graphql(gateway, '{ quota }', { authorization })).toMatchObject({ status: 200, body: { data: { quota: 12.5 } } });
    expect(sample(await scrapeMetrics(gateway.url), 'mongodb_up')).toBe(1);
  });

  it('answers quickly and cleanly while the database is down, then recovers by itself once it is back', async () => {
    await database.crash();

    const graphqlFailure = await timed(() => graphql(gateway, '{ quota }', { authorization }));
    expect(graphqlFailure.result.status).toBe(503);
    expect(graphqlFailure.result.body).toEqual({
      data: null,
      errors: [
        expect.objectContaining({
          message: 'database unavailable, try again later',
          extensions: expect.objectContaining({ code: 'DATABASE_UNAVAILABLE' }),
        }),
      ],
    });
    expect(graphqlFailure.ms).toBeLessThan(FAIL_WITHIN_MS);

    const restFailures = await timed(() => Promise.all([rest('/conversation/list'), rest('/conversation/load?id=1'), rest('/quota')]));
    expect(restFailures.result).toEqual([
      { status: 503, text: JSON.stringify({ status: false, message: UNAVAILABLE_SENTENCE }) },
      { status: 503, text: JSON.stringify({ status: false, message: UNAVAILABLE_SENTENCE }) },
      { status: 503, text: JSON.stringify({ status: false, error: UNAVAILABLE_SENTENCE }) },
    ]);
    expect(restFailures.ms).toBeLessThan(FAIL_WITHIN_MS);

    // An API key is checked against the database before GraphQL runs: same answer.
    const keyFailure = await graphql(gateway, '{ quota }', { authorization: API_KEY });
    expect(keyFailure.status).toBe(503);
    expect(keyFailure.body.errors?.[0]?.extensions?.code).toBe('DATABASE_UNAVAILABLE');

    const readiness = await timed(() => fetch(`${gateway.url}/readyz`));
    expect(readiness.result.status).toBe(503);
    expect(readiness.ms).toBeLessThan(1_500);
    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
    const metrics = await scrapeMetrics(gateway.url);
    expect(sample(metrics, 'mongodb_up')).toBe(0);
    expect(sample(metrics, 'graphql_errors_total', { code: 'DATABASE_UNAVAILABLE' })).toBeGreaterThanOrEqual(4);

    await database.restart();
    const readyAfterMs = await msUntil(ready, RECOVER_WITHIN_MS);
    const answeringAfterMs = await msUntil(quotaAnswers, RECOVER_WITHIN_MS);
    // The restarted engine is empty: load the data again and check real answers.
    await gateway.seed(SEED);
    expect(await graphql(gateway, '{ quota }', { authorization })).toMatchObject({ status: 200, body: { data: { quota: 12.5 } } });
    expect((await rest('/conversation/list')).status).toBe(200);
    expect(sample(await scrapeMetrics(gateway.url), 'mongodb_up')).toBe(1);

    console.info(
      `database crash: GraphQL failed in ${graphqlFailure.ms} ms, three REST calls in ${restFailures.ms} ms, /readyz in ${readiness.ms} ms; ` +
        `after restart: ready in ${readyAfterMs} ms, answering in ${readyAfterMs + answeringAfterMs} ms`,
    );
  });

  it('answers within a bound when the database hangs without closing connections, and recovers when it resumes', async () => {
    database.pause();
    try {
      const failure = await timed(() => graphql(gateway, '{ quota }', { authorization }));
      expect(failure.result.status).toBe(503);
      expect(failure.result.body.errors?.[0]?.extensions?.code).toBe('DATABASE_UNAVAILABLE');
      expect(failure.ms).toBeLessThan(FAIL_WHEN_FROZEN_WITHIN_MS);
      const readiness = await timed(() => fetch(`${gateway.url}/readyz`));
      expect(readiness.result.status).toBe(503);
      expect(readiness.ms).toBeLessThan(1_500);
      console.info(`database frozen: GraphQL failed in ${failure.ms} ms, /readyz in ${readiness.ms} ms`);
    } finally {
      database.resume();
    }
    const recoveredMs = await msUntil(quotaAnswers, RECOVER_WITHIN_MS);
    expect(await ready()).toBe(true);
    console.info(`database resumed: answering again after ${recoveredMs} ms`);
  });
});
