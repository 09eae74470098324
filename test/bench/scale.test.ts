import { describe, expect, it } from 'vitest';

import type { Sample } from './load.js';
import { FULL_SCALE, scaleRatios, type ScaleReport, scaleTargets } from './scale.js';

type Cases = Parameters<typeof scaleRatios>[0];

/** A case measured in rounds with these CPU times per request (µs) of the gateway, and of the engine. */
function measured(cpu: readonly number[], bodyBytes: number, db: readonly number[] = cpu): Cases['list_small'] {
  const per_round: Sample[] = cpu.map((server_cpu_us, round) => ({
    rps: 100,
    p50_ms: Number.NaN,
    p99_ms: Number.NaN,
    requests: 100,
    server_cpu_us,
    db_cpu_us: db[round],
  }));
  return { per_round, body_bytes: bodyBytes };
}

/** `count` arrivals at `ms` milliseconds, then one slow one, so that the p99 is `ms`. */
const arrivals = (ms: number, count = 199) => [...Array.from({ length: count }, () => ms), 10 * ms];

describe('the scale scenarios report', () => {
  it('takes each growth ratio within a round: CPU per request of the lists, CPU per KiB of the loads, p99 of the fan-out', () => {
    const ratios = scaleRatios(
      {
        list_small: measured([1000, 1000, 2000], 10_000, [100, 100, 100]),
        list_large: measured([1100, 1500, 1000], 10_000, [100, 300, 200]),
        // 1 KiB for 1 000 µs against 1 000 KiB for 500 000 µs: 1 000 against 500 µs per KiB.
        load_short: measured([1000, 1000, 1000], 1024),
        load_long: measured([500_000, 1_000_000, 1_500_000], 1024 * 1000),
      },
      { gateway: [arrivals(12), arrivals(30), arrivals(10)], floor: [arrivals(10), arrivals(10), arrivals(10)] },
    );
    expect(ratios.list_cpu_large_vs_small).toMatchObject({ median: 1.1, min: 0.5, max: 1.5 });
    expect(ratios.list_db_cpu_large_vs_small).toMatchObject({ median: 2, min: 1, max: 3 });
    expect(ratios.load_cpu_per_kib_long_vs_short).toMatchObject({ median: 1, min: 0.5, max: 1.5 });
    expect(ratios.fanout_p99_gateway_vs_floor).toMatchObject({ median: 1.2, min: 1, max: 3 });
  });

  it('judges each goal on the median over the rounds, with the range, and the memory on its own figure', () => {
    const ratio = (median: number) => ({ median, min: median - 0.1, max: median + 0.1, per_round: [median - 0.1, median, median + 0.1] });
    const report = {
      sizes: FULL_SCALE,
      ratios: {
        list_cpu_large_vs_small: ratio(1.1),
        list_db_cpu_large_vs_small: ratio(5),
        load_cpu_per_kib_long_vs_short: ratio(1.3),
        fanout_p99_gateway_vs_floor: ratio(1.19),
      },
      fanout: { gateway: { rss_growth_mb: 151 }, floor: { rss_growth_mb: 100 } },
    } as unknown as ScaleReport;
    const targets = scaleTargets(report);
    expect(targets.map(({ met, value, goal }) => ({ met, value, goal }))).toEqual([
      { met: true, value: 1.1, goal: '<= 1.1' },
      { met: false, value: 1.3, goal: '<= 1.2' },
      { met: false, value: 151, goal: '<= 150' },
      { met: true, value: 1.19, goal: '<= 1.2' },
    ]);
    expect(targets[0]!.range!.rounds).toBe(3);
    expect(targets[0]!.range!.max).toBeCloseTo(1.2);
  });
});
