import type { Sample } from './load.js';

export interface ScenarioSummary extends Omit<Sample, 'requests'> {
  /** Lowest and highest req/s over the rounds. */
  rps_min: number;
  rps_max: number;
  rounds: number;
}

export interface Target {
  name: string;
  value: number;
  /** e.g. ">= 0.8" */
  goal: string;
  met: boolean;
}

export interface Report {
  machine: { cores: number; cpu: string; node: string; database: string; dataset: string; loadAverage: { start: number; end: number } };
  scenarios: Record<string, ScenarioSummary>;
  ratios: Record<string, number>;
  commandsPerRequest: Record<string, number>;
  memory: { rss_before_soak_mb: number; rss_after_soak_mb: number; rss_growth_mb: number; rss_max_mb: number; soak_seconds: number };
  targets: Target[];
}

const atLeast = (name: string, value: number, goal: number): Target => ({ name, value, goal: `>= ${goal}`, met: value >= goal });
const atMost = (name: string, value: number, goal: number): Target => ({ name, value, goal: `<= ${goal}`, met: value <= goal });

/** The two reads every peer serves. */
const WORKS = ['list', 'load'] as const;

/**
 * Every ratio the targets name, from the medians of one run: CPU time per request of the
 * answering process (the machine's other load moves req/s far more than it moves CPU per
 * request), the p99 latencies against the hand-written baseline, and the scale check.
 */
export function ratiosOf(scenarios: Record<string, Pick<Sample, 'rps' | 'p99_ms' | 'server_cpu_us'>>): Record<string, number> {
  const rps = (name: string) => scenarios[name]?.rps ?? Number.NaN;
  const p99 = (name: string) => scenarios[name]?.p99_ms ?? Number.NaN;
  const cpu = (name: string) => scenarios[name]?.server_cpu_us ?? Number.NaN;
  const ratios: Record<string, number> = {};
  for (const work of WORKS) {
    ratios[`cpu_rest_vs_baseline_${work}`] = cpu(`rest_${work}`) / cpu(`baseline_${work}`);
    ratios[`cpu_graphql_vs_baseline_${work}`] = cpu(`graphql_${work}`) / cpu(`baseline_${work}`);
    ratios[`cpu_rest_vs_graphql_${work}`] = cpu(`rest_${work}`) / cpu(`graphql_${work}`);
    ratios[`cpu_graphql_vs_apollo_${work}`] = cpu(`graphql_${work}`) / cpu(`apollo_${work}`);
    ratios[`cpu_rest_vs_floor_${work}`] = cpu(`rest_${work}`) / cpu(`floor_${work}`);
    ratios[`cpu_graphql_vs_floor_${work}`] = cpu(`graphql_${work}`) / cpu(`floor_${work}`);
    ratios[`cpu_baseline_vs_floor_${work}`] = cpu(`baseline_${work}`) / cpu(`floor_${work}`);
    ratios[`cpu_floor_vs_apollo_${work}`] = cpu(`floor_${work}`) / cpu(`apollo_${work}`);
    ratios[`cpu_express_floor_vs_apollo_${work}`] = cpu(`express_floor_${work}`) / cpu(`apollo_${work}`);
    ratios[`p99_rest_vs_baseline_${work}`] = p99(`rest_${work}`) / p99(`baseline_${work}`);
    ratios[`p99_graphql_vs_baseline_${work}`] = p99(`graphql_${work}`) / p99(`baseline_${work}`);
  }
  ratios.cpu_rest_vs_graphql_quota = cpu('rest_quota') / cpu('graphql_quota');
  ratios.scale_rest_list_full_vs_small = rps('rest_list') / rps('rest_list_small');
  return ratios;
}

export function targetsOf(report: Omit<Report, 'targets'>, quick: boolean): Target[] {
  const { ratios, commandsPerRequest: commands, memory } = report;
  const targets: Target[] = [];
  for (const work of WORKS) {
    targets.push(
      atMost(`CPU/request: REST ${work} vs hand-written`, ratios[`cpu_rest_vs_baseline_${work}`]!, 1.0),
      atMost(`CPU/request: GraphQL ${work} vs hand-written`, ratios[`cpu_graphql_vs_baseline_${work}`]!, 1.1),
      atMost(`CPU/request: REST ${work} vs own GraphQL`, ratios[`cpu_rest_vs_graphql_${work}`]!, 0.9),
      atMost(`CPU/request: GraphQL ${work} vs Apollo defaults`, ratios[`cpu_graphql_vs_apollo_${work}`]!, 0.5),
      atMost(`CPU/request: REST ${work} vs floor`, ratios[`cpu_rest_vs_floor_${work}`]!, work === 'list' ? 1.3 : 2),
    );
  }
  for (const work of WORKS) {
    targets.push(
      atMost(`p99 REST ${work} vs hand-written`, ratios[`p99_rest_vs_baseline_${work}`]!, 2),
      atMost(`p99 GraphQL ${work} vs hand-written`, ratios[`p99_graphql_vs_baseline_${work}`]!, 2),
    );
  }
  targets.push(
    atLeast('scale: REST list, full vs 1% data set', ratios.scale_rest_list_full_vs_small!, 0.8),
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

export function formatReport(report: Report): string {
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
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]) =>
    cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ');

  const { machine, memory } = report;
  return [
    `chat-gateway benchmark — ${machine.cores} cores (${machine.cpu}), Node ${machine.node}, ${machine.database}, ${machine.dataset}`,
    `load average (1 min) at start ${fixed(machine.loadAverage.start, 2)}, at end ${fixed(machine.loadAverage.end, 2)}: anything else running on the machine skews the figures`,
    `16 connections, medians of the rounds; spread is half the min–max range of req/s;`,
    `cpu µs/req: CPU time of the answering process per request (x baseline, x floor: against that peer's same read); db µs/req: the same for the embedded engine`,
    '',
    line(header),
    line(widths.map((width) => '-'.repeat(width))),
    ...rows.map(line),
    '',
    `gateway RSS: ${fixed(memory.rss_before_soak_mb, 0)} MB at the start and ${fixed(memory.rss_after_soak_mb, 0)} MB at the end of a ${memory.soak_seconds} s soak at full load (growth ${fixed(memory.rss_growth_mb, 1)} MB), ${fixed(memory.rss_max_mb, 0)} MB at most during the whole run`,
    '',
    'targets:',
    ...report.targets.map((target) => `  ${target.met ? 'met    ' : 'MISSED '} ${target.name}: ${fixed(target.value, 2)} (${target.goal})`),
    ...reachOfApolloGoal(report.ratios),
  ].join('\n');
}

/**
 * What the floors cost against Apollo Server's defaults: a server cannot spend less than the floor
 * on its stack, so "GraphQL ≤ 0.5× Apollo defaults" is out of reach for an Express server wherever
 * the Express floor alone costs more than half of Apollo's CPU.
 */
function reachOfApolloGoal(ratios: Record<string, number>): string[] {
  const lines = WORKS.flatMap((work) => {
    const floor = ratios[`cpu_floor_vs_apollo_${work}`] ?? Number.NaN;
    const expressFloor = ratios[`cpu_express_floor_vs_apollo_${work}`] ?? Number.NaN;
    if (!Number.isFinite(floor) && !Number.isFinite(expressFloor)) return [];
    return [
      `  ${work}: floor ${fixed(floor, 2)}, Express floor ${fixed(expressFloor, 2)}${expressFloor > 0.5 ? ' (the 0.5 goal is below the Express floor)' : ''}`,
    ];
  });
  return lines.length > 0
    ? ['', 'CPU/request against Apollo defaults of the floors, the least a server on each stack spends:', ...lines]
    : [];
}

/** The `--json` file: the shape (`scenarios` and `ratios`), plus the rest of the report. */
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
      },
    ]),
  );
  const ratios = Object.fromEntries(Object.entries(report.ratios).map(([name, value]) => [name, round(value, 3)]));
  return {
    scenarios,
    ratios,
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
