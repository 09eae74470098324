import { describe, expect, it } from 'vitest';

import { Failure } from '../../../src/errors.js';
import { addressKey, createRateLimits, MessageRate, WindowCounter } from '../../../src/security/rate-limit.js';
import { ManualClock } from '../../support/clock.js';

describe('MessageRate, on the injected clock', () => {
  it('lets a burst of ten seconds’ worth through at once, then nothing until time passes', () => {
    const rate = new MessageRate(3, new ManualClock(0));
    const answers = Array.from({ length: 31 }, () => rate.take());
    expect(answers.filter(Boolean)).toHaveLength(30);
    expect(answers[30]).toBe(false);
  });

  it('refills at the rate as the clock moves', async () => {
    const clock = new ManualClock(0);
    const rate = new MessageRate(2, clock);
    for (let n = 0; n < 20; n += 1) rate.take();
    expect(rate.take()).toBe(false);
    await clock.advance(499);
    expect(rate.take()).toBe(false);
    await clock.advance(1);
    expect([rate.take(), rate.take()]).toEqual([true, false]);
  });

  it('refills no more than the burst, however long the pause', async () => {
    const clock = new ManualClock(0);
    const rate = new MessageRate(1, clock);
    await clock.advance(3_600_000);
    expect(Array.from({ length: 11 }, () => rate.take())).toEqual([...Array(10).fill(true), false]);
  });

  it('refills nothing when the clock is set back, and refills again as it moves on', () => {
    let now = 100_000;
    const rate = new MessageRate(1, { now: () => now });
    for (let n = 0; n < 10; n += 1) rate.take();
    now -= 50_000;
    expect(rate.take()).toBe(false);
    now += 1_000;
    expect(rate.take()).toBe(true);
  });

  it('limits nothing at 0', () => {
    const rate = new MessageRate(0, new ManualClock(0));
    expect(Array.from({ length: 10_000 }, () => rate.take()).every(Boolean)).toBe(true);
  });
});

describe('addressKey', () => {
  it.each([
    ['192.0.2.1', '192.0.2.1'],
    ['::ffff:192.0.2.1', '192.0.2.1'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:db8:1:2:ffff::1', '2001:db8:1:2::/64'],
    [undefined, 'unknown'],
    ['not an address', 'unknown'],
  ])('counts %s as %s', (address, key) => {
    expect(addressKey(address)).toBe(key);
  });
});

/** How many of `count` requests of `key` at once `take` lets through, and the Retry-After of each refusal. */
async function takeAtOnce(take: (key: string) => Promise<void>, key: string, count: number) {
  const outcomes = await Promise.allSettled(Array.from({ length: count }, () => take(key)));
  const retryAfters = outcomes.flatMap((outcome) => {
    if (outcome.status === 'fulfilled') return [];
    const failure = outcome.reason as Failure;
    expect(failure).toBeInstanceOf(Failure);
    expect(failure.extensions.code).toBe('RATE_LIMITED');
    return [failure.headers['Retry-After']];
  });
  return { served: count - retryAfters.length, retryAfters };
}

describe('WindowCounter, on the injected clock', () => {
  it('lets one second’s worth and a burst of two more through at once, and refuses the rest with Retry-After 1', async () => {
    const counter = new WindowCounter(5, new ManualClock(0));
    const { served, retryAfters } = await takeAtOnce((key) => counter.take(key), 'a', 40);
    expect(served).toBe(5 + 10);
    expect(retryAfters).toEqual(Array.from({ length: 25 }, () => '1'));
  });

  it('opens a steady window each second, and the burst again only when its ten seconds have passed', async () => {
    const clock = new ManualClock(0);
    const counter = new WindowCounter(5, clock);
    const take = (key: string) => counter.take(key);
    expect((await takeAtOnce(take, 'a', 40)).served).toBe(15);
    await clock.advance(999);
    expect((await takeAtOnce(take, 'a', 1)).served).toBe(0);
    await clock.advance(1);
    // A new second, but the burst window of the first flood is spent until 10 s.
    expect((await takeAtOnce(take, 'a', 20)).served).toBe(5);
    for (let second = 2; second < 10; second += 1) {
      await clock.advance(1_000);
      expect((await takeAtOnce(take, 'a', 20)).served).toBe(5);
    }
    await clock.advance(1_000);
    expect((await takeAtOnce(take, 'a', 40)).served).toBe(15);
  });

  it('counts each key on its own', async () => {
    const counter = new WindowCounter(1, new ManualClock(0));
    const take = (key: string) => counter.take(key);
    expect((await takeAtOnce(take, 'a', 10)).served).toBe(3);
    expect((await takeAtOnce(take, 'b', 10)).served).toBe(3);
  });

  it('says to retry when the burst window ends if that comes before the second does', async () => {
    const clock = new ManualClock(0);
    const counter = new WindowCounter(1, clock);
    const take = (key: string) => counter.take(key);
    await takeAtOnce(take, 'a', 1);
    await clock.advance(9_500);
    // The steady window opened now (ends at 10.5 s); the burst window, opened by this request, ends at 19.5 s.
    expect(await takeAtOnce(take, 'a', 4)).toEqual({ served: 3, retryAfters: ['1'] });
    await clock.advance(9_700);
    // Now the steady window ends at 20.2 s and the burst one at 19.5 s: retry in 0.3 s, said as 1.
    expect(await takeAtOnce(take, 'a', 4)).toEqual({ served: 1, retryAfters: ['1', '1', '1'] });
  });

  it('forgets keys whose windows ended, and counts them afresh', async () => {
    const clock = new ManualClock(0);
    const counter = new WindowCounter(1, clock);
    const take = (key: string) => counter.take(key);
    for (let key = 0; key < 200; key += 1) await takeAtOnce(take, String(key), 5);
    await clock.advance(10_000);
    await takeAtOnce(take, 'other', 1);
    const windows = counter as unknown as { steady: Map<string, unknown>; burst: Map<string, unknown> };
    expect([windows.steady.size, windows.burst.size]).toEqual([1, 0]);
    expect((await takeAtOnce(take, '0', 5)).served).toBe(3);
  });
});

describe('createRateLimits in memory, on the injected clock', () => {
  it('lets one address ten times a caller’s rate, counting an IPv6 address by its /64', async () => {
    const clock = new ManualClock(0);
    const limits = await createRateLimits({ requestsPerSecond: 1, clock });
    const countAddress = (address: string) => limits.countAddress(address);
    expect((await takeAtOnce(countAddress, '192.0.2.1', 40)).served).toBe(30);
    expect((await takeAtOnce(countAddress, '::ffff:192.0.2.1', 1)).served).toBe(0);
    expect((await takeAtOnce(countAddress, '192.0.2.2', 40)).served).toBe(30);
    expect((await takeAtOnce(countAddress, '2001:db8:1:2::1', 20)).served).toBe(20);
    expect((await takeAtOnce(countAddress, '2001:db8:1:2:ffff::9', 20)).served).toBe(10);
    expect((await takeAtOnce(countAddress, '2001:db8:1:3::1', 20)).served).toBe(20);
  });

  it('counts callers apart from addresses, at the caller’s rate', async () => {
    const clock = new ManualClock(0);
    const limits = await createRateLimits({ requestsPerSecond: 2, clock });
    const countCaller = (key: string) => limits.countCaller(Number(key));
    expect((await takeAtOnce(countCaller, '1', 10)).served).toBe(6);
    expect((await takeAtOnce(countCaller, '2', 10)).served).toBe(6);
    expect((await takeAtOnce((address) => limits.countAddress(address), '192.0.2.1', 70)).served).toBe(60);
    await clock.advance(1_000);
    expect((await takeAtOnce(countCaller, '1', 10)).served).toBe(2);
  });

  it('limits nothing at 0', async () => {
    const limits = await createRateLimits({ requestsPerSecond: 0, clock: new ManualClock(0) });
    expect((await takeAtOnce((key) => limits.countCaller(Number(key)), '1', 1_000)).served).toBe(1_000);
    expect((await takeAtOnce((address) => limits.countAddress(address), '192.0.2.1', 1_000)).served).toBe(1_000);
  });
});
