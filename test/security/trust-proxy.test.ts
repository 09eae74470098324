import { afterEach, describe, expect, it } from 'vitest';

import { loadConfig } from '../../src/config.js';
import { addressKey } from '../../src/security/rate-limit.js';
import { ManualClock } from '../support/clock.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';

let gateway: TestGateway | undefined;
/**
 * A gateway limiting at RATE_LIMIT=1 (per address 10 a second and a burst of 20: 30 at one instant)
 * on a clock that stands still: its 60 requests in a row are over the address's limit however slowly
 * the machine sends them.
 */
const startLimited = (environment: Record<string, string> = {}) =>
  startTestGateway({ RATE_LIMIT: '1', ...environment }, { clock: new ManualClock() });
/** The statuses of 60 unauthenticated requests in a row from one client: 30 refused for their credentials, then 30 limited. */
const OVER_THE_LIMIT = [...Array.from({ length: 30 }, () => 401), ...Array.from({ length: 30 }, () => 429)];
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
    gateway = await startLimited({ TRUST_PROXY: 'loopback' });
    const { flooded, other } = await floodThenAskFromAnother(gateway.url);
    expect(flooded).toEqual(OVER_THE_LIMIT);
    expect(other).toBe(401);
  });

  it('ignores X-Forwarded-For by default, so a client cannot pick its own address', async () => {
    gateway = await startLimited();
    const { flooded, other } = await floodThenAskFromAnother(gateway.url);
    expect(flooded).toEqual(OVER_THE_LIMIT);
    expect(other).toBe(429);
  });

  it('refuses a malformed value at start', () => {
    expect(() => loadConfig({ TRUST_PROXY: 'every proxy; really' })).toThrow(/TRUST_PROXY/);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, loopback' }).trustProxy).toEqual(['10.0.0.0/8', 'loopback']);
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({}).trustProxy).toBe(false);
  });
});

describe('the per-address limit for IPv6 clients', () => {
  /** Statuses of unauthenticated requests forwarded "from" each address in turn. */
  async function askFrom(url: string, addresses: string[]): Promise<number[]> {
    const statuses: number[] = [];
    for (const address of addresses) statuses.push((await fetch(`${url}/quota`, { headers: { 'x-forwarded-for': address } })).status);
    return statuses;
  }

  it('counts a whole /64 as one client, however many of its addresses it rotates through', async () => {
    gateway = await startLimited({ TRUST_PROXY: 'loopback' });
    const rotating = Array.from({ length: 60 }, (_, index) => `2001:db8:1:2:${(index + 1).toString(16)}:5efe:c0a8:${index.toString(16)}`);
    expect(await askFrom(gateway.url, rotating)).toEqual(OVER_THE_LIMIT);
    expect(await askFrom(gateway.url, ['2001:db8:1:3::1'])).toEqual([401]);
  });

  it('counts an IPv4-mapped IPv6 address as the IPv4 address it maps', async () => {
    gateway = await startLimited({ TRUST_PROXY: 'loopback' });
    await askFrom(
      gateway.url,
      Array.from({ length: 60 }, () => '::ffff:198.51.100.7'),
    );
    expect(await askFrom(gateway.url, ['198.51.100.7'])).toEqual([429]);
  });

  it('keys addresses by IPv4 address or IPv6 /64', () => {
    expect(addressKey('198.51.100.7')).toBe('198.51.100.7');
    expect(addressKey('::ffff:198.51.100.7')).toBe('198.51.100.7');
    expect(addressKey('2001:db8:1:2::1')).toBe(addressKey('2001:0db8:0001:0002:ffff:ffff:ffff:ffff'));
    expect(addressKey('2001:db8:1:2::1')).not.toBe(addressKey('2001:db8:1:3::1'));
    expect(addressKey(undefined)).toBe('unknown');
  });
});
