import { describe, expect, it } from 'vitest';

import { messageRate } from '../../src/security/rate-limit.js';
import { ManualClock } from '../support/clock.js';

describe('a message rate', () => {
  it('allows a burst of ten seconds’ worth at once, then one more per 1/rate of a second', async () => {
    const clock = new ManualClock();
    const withinRate = messageRate(2, clock);
    expect(Array.from({ length: 21 }, withinRate)).toEqual([...Array(20).fill(true), false]);
    await clock.advance(499);
    expect(withinRate()).toBe(false);
    await clock.advance(1);
    expect([withinRate(), withinRate()]).toEqual([true, false]);
  });

  it('refills no more than the burst, however long the pause', async () => {
    const clock = new ManualClock();
    const withinRate = messageRate(1, clock);
    await clock.advance(3_600_000);
    expect(Array.from({ length: 11 }, withinRate)).toEqual([...Array(10).fill(true), false]);
  });

  it('refills nothing when the clock is set back', () => {
    let now = 100_000;
    const withinRate = messageRate(1, { now: () => now });
    Array.from({ length: 10 }, withinRate);
    now -= 50_000;
    expect(withinRate()).toBe(false);
    now += 1_000;
    expect(withinRate()).toBe(true);
  });

  it('limits nothing at 0', () => {
    const withinRate = messageRate(0, new ManualClock());
    expect(Array.from({ length: 10_000 }, withinRate).every(Boolean)).toBe(true);
  });
});
