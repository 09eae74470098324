import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { exactMicros, MAX_BALANCE_POINTS, microsToPoints, roundedMicros } from '../../src/accounts/points.js';

const MAX_MICROS = MAX_BALANCE_POINTS * 1_000_000;

describe('micro-points', () => {
  it('read amounts through their decimal text, so no float product rounds them', () => {
    expect(exactMicros(12.5)).toBe(12_500_000);
    expect(exactMicros(0.000001)).toBe(1);
    expect(exactMicros(3.141593)).toBe(3_141_593);
    expect(exactMicros('123456789.123456')).toBe(123_456_789_123_456);
    expect(exactMicros(-0.25)).toBe(-250_000);
    // 0.1 + 0.2 is 0.30000000000000004 as a number: more than six decimals.
    expect(exactMicros(0.1 + 0.2)).toBeNull();
    expect(exactMicros(1e-7)).toBeNull();
    expect(exactMicros(Number.NaN)).toBeNull();
    expect(exactMicros(1e300)).toBeNull();
  });

  it('round a binary floating point amount to six decimals, half to even, from its shortest decimal text', () => {
    expect(roundedMicros(0.1 + 0.2)).toBe(300_000);
    // What a float32 balance (Chat Nio's Go code) becomes as a double: 3.1415929794311523.
    expect(roundedMicros(Math.fround(3.141593))).toBe(3_141_593);
    expect(roundedMicros(Math.fround(0.000001))).toBe(1);
    expect(roundedMicros('0.0000005')).toBe(0);
    expect(roundedMicros('0.0000015')).toBe(2);
    expect(roundedMicros(-0.0000001)).toBe(0);
    expect(Object.is(roundedMicros(-0.0000001), -0)).toBe(false);
  });

  it('print every balance up to the largest with exactly its decimals, and read back to the same micro-points', () => {
    fc.assert(
      fc.property(fc.integer({ min: -MAX_MICROS, max: MAX_MICROS }), (micros) => {
        const printed = JSON.stringify(microsToPoints(micros));
        expect(printed).toBe(decimalText(micros));
        expect(exactMicros(JSON.parse(printed) as number)).toBe(micros);
      }),
      { numRuns: 20_000 },
    );
  });

  it('print a balance held in ten-thousandths before as the very same number', () => {
    fc.assert(
      fc.property(fc.integer({ min: -MAX_MICROS / 100, max: MAX_MICROS / 100 }), (units) => {
        expect(microsToPoints(units * 100)).toBe(units / 10_000);
      }),
      { numRuns: 20_000 },
    );
  });
});

/** Micro-points written out by hand as decimal text: -1 is -0.000001, 12 500 000 is 12.5. */
function decimalText(micros: number): string {
  const magnitude = Math.abs(micros);
  const fraction = String(magnitude % 1_000_000)
    .padStart(6, '0')
    .replace(/0+$/, '');
  return `${micros < 0 ? '-' : ''}${Math.floor(magnitude / 1_000_000)}${fraction === '' ? '' : `.${fraction}`}`;
}
