import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { READINESS_TIMEOUT_MS } from '../../src/http/health.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';

let gateway: TestGateway;

beforeAll(async () => {
  gateway = await startTestGateway();
});
afterAll(() => gateway?.stop());

describe('health endpoints', () => {
  it('answers /healthz with 200 and no credentials, never cached', async () => {
    const response = await fetch(`${gateway.url}/healthz`);
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(await response.json()).toEqual({ status: 'ok' });
  });

  it('answers /readyz with 200 and no credentials while the database answers a ping', async () => {
    const response = await fetch(`${gateway.url}/readyz`);
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(await response.json()).toEqual({ status: 'ready', websockets: 0, subscriptions: 0 });
  });

  it('answers /readyz with 503 once the database is closed', async () => {
    const other = await startTestGateway();
    try {
      await other.database.close();
      const started = performance.now();
      const response = await fetch(`${other.url}/readyz`);
      expect(response.status).toBe(503);
      expect(await response.json()).toEqual({ status: 'database unavailable', websockets: 0, subscriptions: 0 });
      // Within the readiness timeout's order, not the driver's 30 s server selection: which wait
      // ended it decides, with room for a busy machine.
      expect(performance.now() - started).toBeLessThan(10 * READINESS_TIMEOUT_MS);
    } finally {
      await other.stop();
    }
  });
});
