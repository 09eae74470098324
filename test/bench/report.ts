import { median, type Sample } from './load.js';

export interface ScenarioSummary extends Omit<Sample, 'requests'> {
  /** Lowest and highest req/s over the rounds. */
  rps_min: number;
  rps_max: number;
  rounds: number;
  /** Each round's figures, in the order of the rounds. */
  per_round: Sample[];
}

/**
 * A ratio of two scenarios' figures, taken in each round from that round's measurements of both
 * (run side by side, so that the machine's load of the moment weighs on both), then summed up over
 * the rounds: its median, which targets are judged on, and its range, which shows the noise.
 */
export interface Ratio {
  median: number;
  min: number;
  max: number;
  per_round: number[];
}

export interface Target {
  name: string;
  value: number;
  /** e.g. ">= 0.8" */
  goal: string;
  met: boolean;
  /** For a ratio: its range over the rounds. */
  range?: { min: number; max: number; rounds: number };
}

export interface Report {
  machine: { cores: number; cpu: string; node: string; database: string; dataset: string; loadAverage: { start: number; end: number } };
  scenarios: Record<string, ScenarioSummary>;
  ratios: Record<string, Ratio>;
  commandsPerRequest: Record<string, number>;
  memory: { rss_before_soak_mb: number; rss_after_soak_mb: number; rss_growth_mb: number; rss_max_mb: number; soak_seconds: number };
  targets: Target[];
}

export const atLeast = (name: string, value: number, goal: number): Target => ({ name, value, goal: `>= ${goal}`, met: value >= goal });
export const atMost = (name: string, value: number, goal: number): Target => ({ name, value, goal: `<= ${goal}`, met: value <= goal });

/** The two reads every peer serves. */
const WORKS = ['list', 'load'] as const;
type Work = (typeof WORKS)[number];

/** A ratio the report shows for both reads: `figure` of scenario `${over}_${work}` over that of `${under}_${work}`. */
interface RatioSpec {
  figure: 'cpu' | 'p99';
  over: string;
  under: string;
  label: string;
}

/**
 * Every ratio of the two reads: CPU time per request of the answering process (the machine's
 * other load moves req/s far more than it moves CPU per request), and p99 latencies.
 */
const RATIOS: readonly RatioSpec[] = [
  { figure: 'cpu', over: 'rest', under: 'baseline', label: 'REST / hand-written' },
  { figure: 'cpu', over: 'rest', under: 'floor', label: 'REST / floor' },
  { figure: 'cpu', over: 'rest', under: 'graphql', label: "REST / the gateway's GraphQL" },
  { figure: 'cpu', over: 'graphql', under: 'baseline', label: 'GraphQL / hand-written' },
  { figure: 'cpu', over: 'graphql', under: 'floor', label: 'GraphQL / floor' },
  { figure: 'cpu', over: 'graphql', under: 'apollo', label: 'GraphQL / Apollo defaults' },
  { figure: 'cpu', over: 'graphql', under: 'mercurius', label: 'GraphQL / Mercurius + jit' },
  { figure: 'cpu', over: 'graphql', under: 'yoga', label: 'GraphQL / Yoga + jit' },
  { figure: 'cpu', over: 'baseline', under: 'floor', label: 'hand-written / floor' },
  { figure: 'cpu', over: 'floor', under: 'apollo', label: 'floor / Apollo defaults' },
  { figure: 'cpu', over: 'express_floor', under: 'apollo', label: 'Express floor / Apollo defaults' },
  { figure: 'cpu', over: 'mercurius', under: 'apollo', label: 'Mercurius + jit / Apollo defaults' },
  { figure: 'cpu', over: 'yoga', under: 'apollo', label: 'Yoga + jit / Apollo defaults' },
  { figure: 'p99', over: 'rest', under: 'baseline', label: 'p99: REST / hand-written' },
  { figure: 'p99', over: 'graphql', under: 'baseline', label: 'p99: GraphQL / hand-written' },
];

const keyOf = (spec: RatioSpec, work: Work) => `${spec.figure}_${spec.over}_vs_${spec.under}_${work}`;

/** The CPU goals against Apollo Server's defaults, which the floors bound from below. */
const APOLLO_GOAL: Record<Work, number> = { list: 0.6, load: 0.85 };

/**
 * Every ratio, each round's from that round's figures: those of `RATIOS`, the quota's REST over
 * GraphQL, and the scale check (the list's req/s on the full data set over the 1% one, measured
 * before the rest was seeded: round i of one is paired with round i of the other).
 */
export function ratiosOf(scenarios: Record<string, Pick<ScenarioSummary, 'per_round'>>): Record<string, Ratio> {
  const rounds = Math.max(0, ...Object.values(scenarios).map((summary) => summary.per_round.length));
  const figure = (name: string, round: number, pick: (sample: Sample) => number | undefined) => {
    const sample = scenarios[name]?.per_round[round];
    return sample === undefined ? Number.NaN : (pick(sample) ?? Number.NaN);
  };
  const cpu = (name: string, round: number) => figure(name, round, (sample) => sample.server_cpu_us);
  const perRound = (ratio: (round: number) => number) => summarizeRatio(Array.from({ length: rounds }, (_, round) => ratio(round)));
  const ratios: Record<string, Ratio> = {};
  for (const work of WORKS) {
    for (const spec of RATIOS) {
      const pick = spec.figure === 'cpu' ? (sample: Sample) => sample.server_cpu_us : (sample: Sample) => sample.p99_ms;
      ratios[keyOf(spec, work)] = perRound(
        (round) => figure(`${spec.over}_${work}`, round, pick) / figure(`${spec.under}_${work}`, round, pick),
      );
    }
  }
  ratios.cpu_rest_vs_graphql_quota = perRound((round) => cpu('rest_quota', round) / cpu('graphql_quota', round));
  const rps = (sample: Sample) => sample.rps;
  ratios.scale_rest_list_full_vs_small = perRound((round) => figure('rest_list', round, rps) / figure('rest_list_small', round, rps));
  return ratios;
}

/** Median and range of a ratio's values over the rounds; rounds where a side was not measured are left out. */
export function summarizeRatio(values: readonly number[]): Ratio {
  const measured = values.filter((value) => Number.isFinite(value));
  if (measured.length === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN, per_round: [...values] };
  return { median: median(measured), min: Math.min(...measured), max: Math.max(...measured), per_round: [...values] };
}

/** A ratio's range over the rounds it was measured in. */
function rangeOf(ratio: Ratio | undefined): Target['range'] {
  return ratio && { min: ratio.min, max: ratio.max, rounds: ratio.per_round.filter((value) => Number.isFinite(value)).length };
}

/** A target on a ratio: judged on its median, with its range over the rounds. */
function ratioAtMost(name: string, ratio: Ratio | undefined, goal: number): Target {
  return { ...atMost(name, ratio?.median ?? Number.NaN, goal), range: rangeOf(ratio) };
}

/** The goals of CPU per request, median over the rounds of the ratios measured side by side. */
function cpuTargets(ratios: Record<string, Ratio>): Target[] {
  return WORKS.flatMap((work) => [
    ratioAtMost(`CPU/request: REST ${work} vs hand-written`, ratios[`cpu_rest_vs_baseline_${work}`], 1.0),
    ratioAtMost(`CPU/request: REST ${work} vs floor`, ratios[`cpu_rest_vs_floor_${work}`], work === 'list' ? 1.25 : 1.5),
    ratioAtMost(`CPU/request: GraphQL ${work} vs Apollo defaults`, ratios[`cpu_graphql_vs_apollo_${work}`], APOLLO_GOAL[work]),
    // On a load, Express, its body parser and Apollo Server's HTTP handling cost more than Fastify and Mercurius: no goal there.
    ...(work === 'list'
      ? [ratioAtMost(`CPU/request: GraphQL ${work} vs Mercurius + jit`, ratios[`cpu_graphql_vs_mercurius_${work}`], 1.25)]
      : []),
    ratioAtMost(`CPU/request: REST ${work} vs own GraphQL`, ratios[`cpu_rest_vs_graphql_${work}`], 0.9),
  ]);
}

export function targetsOf(report: Omit<Report, 'targets'>, quick: boolean): Target[] {
  const { ratios, commandsPerRequest: commands, memory } = report;
  const targets = cpuTargets(ratios);
  for (const work of WORKS) {
    targets.push(
      ratioAtMost(`p99 REST ${work} vs hand-written`, ratios[`p99_rest_vs_baseline_${work}`], 2),
      ratioAtMost(`p99 GraphQL ${work} vs hand-written`, ratios[`p99_graphql_vs_baseline_${work}`], 2),
    );
  }
  const scale = ratios.scale_rest_list_full_vs_small;
  targets.push(
    { ...atLeast('scale: REST list, full vs 1% data set', scale?.median ?? Number.NaN, 0.8), range: rangeOf(scale) },
    atMost(`RSS growth over a ${memory.soak_seconds} s soak (MB)`, memory.rss_growth_mb, 50),
  );
  if (quick) targets.push(atMost('gateway RSS, quick data set (MB)', memory.rss_max_mb, 300));
  for (const [name, count] of Object.entries(commands)) {
    const expected = name === 'graphql_page_messages' ? 2 : 1;
    targets.push({ name: `database commands per request: ${name}`, value: count, goal: `= ${expected}`, met: count === expected });
  }
  // A run of some scenarios only (--only) leaves the other ratios unmeasured.
  return targets.filter((target) => Number.isFinite(target.value));
}

const fixed = (value: number, digits: number) => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');

/** One target, on one line: met or not, its value (for a ratio, the median and the range over the rounds) and its goal. */
export function formatTarget(target: Target): string {
  const range = target.range ? ` (rounds: ${fixed(target.range.min, 2)}–${fixed(target.range.max, 2)}, ${target.range.rounds} rounds)` : '';
  return `  ${target.met ? 'met    ' : 'MISSED '} ${target.name}: ${fixed(target.value, 2)}${range}, goal ${target.goal}`;
}

/** Lays out rows of cells in columns: the first left-aligned, the others right-aligned, under a header. */
function columns(header: string[], rows: string[][]): string[] {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]) =>
    cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ');
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)];
}

function scenarioTable(report: Report): string[] {
  const cpu = (name: string) => report.scenarios[name]?.server_cpu_us ?? Number.NaN;
  const rows = Object.entries(report.scenarios).map(([name, s]) => {
    // The peers' scenario of the same work: the list (on either data set) or the load.
    const work = WORKS.find((candidate) => name.endsWith(`_${candidate}`) || name.endsWith(`_${candidate}_small`));
    const spread = ((s.rps_max - s.rps_min) / s.rps) * 100;
    const serverCpu = s.server_cpu_us ?? Number.NaN;
    return [
      name,
      fixed(s.rps, 0),
      `±${fixed(spread / 2, 1)}%`,
      fixed(s.p50_ms, 2),
      fixed(s.p99_ms, 2),
      fixed(serverCpu, 0),
      work ? fixed(serverCpu / cpu(`baseline_${work}`), 2) : '',
      work ? fixed(serverCpu / cpu(`floor_${work}`), 2) : '',
      fixed(s.db_cpu_us ?? Number.NaN, 0),
      String(report.commandsPerRequest[name] ?? ''),
    ];
  });
  const header = ['scenario', 'req/s', 'spread', 'p50 ms', 'p99 ms', 'cpu µs/req', 'cpu x baseline', 'cpu x floor', 'db µs/req', 'db cmds'];
  return columns(header, rows);
}

/** Every ratio of the two reads, as the median and the range (min–max) of its per-round values. */
function ratioTable(ratios: Record<string, Ratio>): string[] {
  const cell = (ratio: Ratio | undefined) =>
    ratio && Number.isFinite(ratio.median) ? `${fixed(ratio.median, 2)} (${fixed(ratio.min, 2)}–${fixed(ratio.max, 2)})` : 'n/a';
  const rows = RATIOS.map((spec) => [spec.label, ...WORKS.map((work) => cell(ratios[keyOf(spec, work)]))]).filter((row) =>
    row.slice(1).some((value) => value !== 'n/a'),
  );
  return rows.length > 0 ? columns(['ratio (CPU per request unless p99)', ...WORKS], rows) : [];
}

/**
 * What the floors cost against Apollo Server's defaults: a server cannot spend less than the floor
 * on its stack, so a goal against Apollo defaults is out of reach for an Express server wherever
 * the Express floor alone costs more than the goal allows.
 */
function apolloGoalNotes(ratios: Record<string, Ratio>): string[] {
  return WORKS.flatMap((work) => {
    const expressFloor = ratios[`cpu_express_floor_vs_apollo_${work}`]?.median ?? Number.NaN;
    return expressFloor > APOLLO_GOAL[work]
      ? [`  ${work}: the Express floor alone costs ${fixed(expressFloor, 2)}× Apollo defaults, above the ${APOLLO_GOAL[work]} goal`]
      : [];
  });
}

export function formatReport(report: Report): string {
  const { machine, memory } = report;
  const notes = apolloGoalNotes(report.ratios);
  return [
    `chat-gateway benchmark — ${machine.cores} cores (${machine.cpu}), Node ${machine.node}, ${machine.database}, ${machine.dataset}`,
    `load average (1 min) at start ${fixed(machine.loadAverage.start, 2)}, at end ${fixed(machine.loadAverage.end, 2)}: anything else running on the machine skews the figures`,
    `16 connections, medians of the rounds; spread is half the min–max range of req/s;`,
    `cpu µs/req: CPU time of the answering process per request (x baseline, x floor: against that peer's same read); db µs/req: the same for the embedded engine`,
    '',
    ...scenarioTable(report),
    '',
    'ratios, each taken within one round (both sides measured in it): median over the rounds (min–max):',
    ...ratioTable(report.ratios),
    ...(notes.length > 0 ? ['', 'what the floors leave of the goals against Apollo defaults:', ...notes] : []),
    '',
    `gateway RSS: ${fixed(memory.rss_before_soak_mb, 0)} MB at the start and ${fixed(memory.rss_after_soak_mb, 0)} MB at the end of a ${memory.soak_seconds} s soak at full load (growth ${fixed(memory.rss_growth_mb, 1)} MB), ${fixed(memory.rss_max_mb, 0)} MB at most during the whole run`,
    '',
    'targets (ratios judged on their median over the rounds):',
    ...report.targets.map(formatTarget),
  ].join('\n');
}

/** The `--json` file: the shape (`scenarios`, and `ratios` as medians), plus the rest of the report with per-round values. */
export function jsonReport(report: Report): unknown {
  const scenarios = Object.fromEntries(
    Object.entries(report.scenarios).map(([name, s]) => [
      name,
      { rps: round(s.rps, 1), p50_ms: round(s.p50_ms, 3), p99_ms: round(s.p99_ms, 3) },
    ]),
  );
  const spread = Object.fromEntries(
    Object.entries(report.scenarios).map(([name, s]) => [
      name,
      {
        rps_min: round(s.rps_min, 1),
        rps_max: round(s.rps_max, 1),
        rounds: s.rounds,
        server_cpu_us: round(s.server_cpu_us ?? Number.NaN, 0),
        db_cpu_us: round(s.db_cpu_us ?? Number.NaN, 0),
        server_cpu_us_per_round: s.per_round.map((sample) => round(sample.server_cpu_us ?? Number.NaN, 0)),
        rps_per_round: s.per_round.map((sample) => round(sample.rps, 1)),
      },
    ]),
  );
  const entries = Object.entries(report.ratios);
  return {
    scenarios,
    ratios: Object.fromEntries(entries.map(([name, ratio]) => [name, round(ratio.median, 3)])),
    ratios_per_round: Object.fromEntries(
      entries.map(([name, ratio]) => [
        name,
        {
          median: round(ratio.median, 3),
          min: round(ratio.min, 3),
          max: round(ratio.max, 3),
          per_round: ratio.per_round.map((value) => round(value, 3)),
        },
      ]),
    ),
    spread,
    commands_per_request: report.commandsPerRequest,
    memory: report.memory,
    targets: report.targets,
    machine: report.machine,
  };
}

function round(value: number, digits: number): number | null {
  return Number.isFinite(value) ? Number(value.toFixed(digits)) : null;
}
