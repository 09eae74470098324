import { describe, expect, it } from 'vitest';

import { addressKey, messageRate } from '../../../src/security/rate-limit.js';
import { ManualClock } from '../../support/clock.js';

describe('messageRate, on the injected clock', () => {
  it('lets a burst of ten seconds’ worth through at once, then nothing until time passes', () => {
    const clock = new ManualClock(0);
    const within = messageRate(3, clock);
    const answers = Array.from({ length: 31 }, () => within());
    expect(answers.filter(Boolean)).toHaveLength(30);
    expect(answers[30]).toBe(false);
  });

  it('refills at the rate as the clock moves', async () => {
    const clock = new ManualClock(0);
    const within = messageRate(2, clock);
    for (let n = 0; n < 20; n += 1) within();
    expect(within()).toBe(false);
    await clock.advance(499);
    expect(within()).toBe(false);
    await clock.advance(1);
    expect(within()).toBe(true);
    expect(within()).toBe(false);
  });

  it('refills nothing when the clock is set back', () => {
    let now = 10_000;
    const within = messageRate(1, { now: () => now });
    for (let n = 0; n < 10; n += 1) within();
    now = 0;
    expect(within()).toBe(false);
  });

  it('limits nothing at 0', () => {
    const within = messageRate(0, new ManualClock(0));
    expect(Array.from({ length: 1_000 }, () => within()).every(Boolean)).toBe(true);
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
