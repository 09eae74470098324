import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';

let gateway: TestGateway | undefined;
afterEach(async () => {
  await gateway?.stop();
  gateway = undefined;
});

/** Floods unauthenticated requests "from" one forwarded address, then asks once "from" another. */
async function floodThenAskFromAnother(url: string): Promise<{ flooded: number[]; other: number }> {
  const flooded: number[] = [];
  for (let index = 0; index < 60; index += 1) {
    const response = await fetch(`${url}/quota`, { headers: { 'x-forwarded-for': '203.0.113.1' } });
    flooded.push(response.status);
  }
  const other = await fetch(`${url}/quota`, { headers: { 'x-forwarded-for': '203.0.113.2' } });
  return { flooded, other: other.status };
}

describe('TRUST_PROXY', () => {
  it('lets a trusted proxy name each client, so one client’s flood does not limit another behind the same proxy', async () => {
    gateway = await startTestGateway({ RATE_LIMIT: '1', TRUST_PROXY: 'loopback' });
    const { flooded, other } = await floodThenAskFromAnother(gateway.url);
    expect(flooded).toContain(429);
    expect(other).toBe(401);
  });

  it('ignores X-Forwarded-For by default, so a client cannot pick its own address', async () => {
    gateway = await startTestGateway({ RATE_LIMIT: '1' });
    const { flooded, other } = await floodThenAskFromAnother(gateway.url);
    expect(flooded).toContain(429);
    expect(other).toBe(429);
  });

  it('refuses a malformed value at start', () => {
    expect(() => loadConfig({ TRUST_PROXY: 'every proxy; really' })).toThrow(/TRUST_PROXY/);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, loopback' }).trustProxy).toEqual(['10.0.0.0/8', 'loopback']);
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({}).trustProxy).toBe(false);
  });
});
