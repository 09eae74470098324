import { describe, expect, it } from 'vitest';

import type { Sample } from './load.js';
import { formatReport, jsonReport, ratiosOf, type Report, type ScenarioSummary, targetsOf } from './report.js';
import { formatSubscriptionReport, type SubscriptionReport, subscriptionTargets } from './subscriptions.js';

/** A scenario measured in rounds with these CPU times per request (µs), in round order. */
function measured(cpu: readonly number[]): ScenarioSummary {
  const per_round: Sample[] = cpu.map((server_cpu_us) => ({ rps: 1000, p50_ms: 10, p99_ms: 20, requests: 1000, server_cpu_us }));
  return { rps: 1000, p50_ms: 10, p99_ms: 20, rps_min: 1000, rps_max: 1000, rounds: cpu.length, per_round, server_cpu_us: 0 };
}

function reportOf(scenarios: Record<string, ScenarioSummary>): Report {
  const partial: Omit<Report, 'targets'> = {
    machine: { cores: 2, cpu: 'test', node: 'v20', database: 'test', dataset: 'test', loadAverage: { start: 0, end: 0 } },
    scenarios,
    ratios: ratiosOf(scenarios),
    commandsPerRequest: {},
    memory: { rss_before_soak_mb: 100, rss_after_soak_mb: 100, rss_growth_mb: 0, rss_max_mb: 100, soak_seconds: 0 },
  };
  return { ...partial, targets: targetsOf(partial, false) };
}

describe('the benchmark report', () => {
  it('takes each ratio within a round, and sums the rounds up as their median and range rather than as a ratio of medians', () => {
    // Per round: 1.0, 2.0, 0.75. The ratio of the medians would be 200 / 100 = 2.
    const ratios = ratiosOf({ rest_list: measured([100, 200, 300]), baseline_list: measured([100, 100, 400]) });
    expect(ratios.cpu_rest_vs_baseline_list).toEqual({ median: 1, min: 0.75, max: 2, per_round: [1, 2, 0.75] });
  });

  it('leaves out of a ratio the rounds in which one of its sides was not measured', () => {
    const ratios = ratiosOf({ graphql_load: measured([120, 90, 100]), mercurius_load: measured([100, 100]) });
    expect(ratios.cpu_graphql_vs_mercurius_load).toMatchObject({ median: 1.05, min: 0.9, max: 1.2 });
    expect(ratios.cpu_graphql_vs_apollo_load!.median).toBeNaN();
  });

  it('judges a target on the median ratio, shows its range over the rounds, and omits targets whose sides were not measured', () => {
    const report = reportOf({ graphql_list: measured([130, 110, 150]), mercurius_list: measured([100, 100, 100]) });
    expect(report.targets).toEqual([
      {
        name: 'CPU/request: GraphQL list vs Mercurius + jit',
        value: 1.3,
        goal: '<= 1.25',
        met: false,
        range: { min: 1.1, max: 1.5, rounds: 3 },
      },
      { name: 'RSS growth over a 0 s soak (MB)', value: 0, goal: '<= 50', met: true },
    ]);
    expect(formatReport(report)).toContain(
      'MISSED  CPU/request: GraphQL list vs Mercurius + jit: 1.30 (rounds: 1.10–1.50, 3 rounds), goal <= 1.25',
    );
    expect(formatReport(report)).toMatch(/GraphQL \/ Mercurius \+ jit\s+1\.30 \(1\.10–1\.50\)\s+n\/a/);
  });

  it('holds the REST load to 1.5× the floor, and the list to 1.25×', () => {
    const report = reportOf({
      rest_load: measured([160, 160]),
      floor_load: measured([100, 100]),
      rest_list: measured([120, 120]),
      floor_list: measured([100, 100]),
    });
    const floorTargets = report.targets.filter(({ name }) => name.endsWith('vs floor'));
    expect(floorTargets.map(({ name, goal, met }) => [name, goal, met])).toEqual([
      ['CPU/request: REST list vs floor', '<= 1.25', true],
      ['CPU/request: REST load vs floor', '<= 1.5', false],
    ]);
  });

  it('writes each ratio per round to the JSON report beside its median', () => {
    const json = jsonReport(reportOf({ rest_load: measured([150, 170]), floor_load: measured([100, 100]) })) as any;
    expect(json.ratios.cpu_rest_vs_floor_load).toBe(1.6);
    expect(json.ratios_per_round.cpu_rest_vs_floor_load).toEqual({ median: 1.6, min: 1.5, max: 1.7, per_round: [1.5, 1.7] });
    expect(json.spread.rest_load.server_cpu_us_per_round).toEqual([150, 170]);
  });

  it('holds live updates, on each transport, to a p99 within 1.2× the WebSocket floor p99 and to its RSS per idle socket', () => {
    const latency = { subscribers: 1000, writes: 100, events: 100_000, p50_ms: 4, p99_ms: 12, max_ms: 15 };
    const idle = {
      sockets: 5000,
      rss_mb_before: 100,
      rss_mb_after: 140,
      rss_kb_per_socket: 8.2,
      heap_kb_per_socket: 6,
      heap_committed_kb_per_socket: 7.5,
    };
    const live: SubscriptionReport = {
      idle: {
        gateway: idle,
        gateway_sse: { ...idle, rss_kb_per_socket: 13 },
        gateway_multipart: { ...idle, rss_kb_per_socket: 12 },
        floor: { ...idle, rss_kb_per_socket: 12 },
        floor_sse: { ...idle, rss_kb_per_socket: 10 },
      },
      latency: {
        one_user: {
          gateway: latency,
          gateway_sse: { ...latency, p99_ms: 9 },
          gateway_multipart: { ...latency, p99_ms: 10.9 },
          floor: { ...latency, p99_ms: 9 },
          floor_sse: { ...latency, p99_ms: 6 },
        },
        many_users: {
          gateway: { ...latency, p99_ms: 2 },
          gateway_sse: { ...latency, p99_ms: 2 },
          gateway_multipart: { ...latency, p99_ms: 2 },
          floor: { ...latency, p99_ms: 1 },
          floor_sse: { ...latency, p99_ms: 1 },
        },
      },
    };
    expect(subscriptionTargets(live).map(({ name, value, met }) => [name, Number(value.toFixed(3)), met])).toEqual([
      ["WebSocket: write to event p99 / the floor's, 1000 subscribers of one user", 1.333, false],
      ["WebSocket: RSS per idle subscription / the floor's per idle socket", 0.683, true],
      ["SSE: write to event p99 / the floor's, 1000 subscribers of one user", 1, true],
      ["SSE: RSS per idle subscription / the floor's per idle socket", 1.083, false],
      ["multipart: write to event p99 / the floor's, 1000 subscribers of one user", 1.211, false],
      ["multipart: RSS per idle subscription / the floor's per idle socket", 1, true],
    ]);
    // The SSE floor is shown beside the targets, which stay against the WebSocket floor.
    const text = formatSubscriptionReport(live);
    expect(text).toContain(
      'RSS per idle connection: gateway / floor 0.68, gateway_sse / floor 1.08, gateway_multipart / floor 1.00, floor_sse / floor 0.83, gateway_sse / floor_sse 1.30, gateway_multipart / floor_sse 1.20',
    );
    expect(text).toContain('gateway_sse / floor_sse: p50 1.00, p99 1.50');
  });
});
