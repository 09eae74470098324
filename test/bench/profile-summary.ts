import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

import { GATEWAY_STEPS, placeOf } from './request-steps.js';

/**
 * Summarises a V8 `.cpuprofile` (from `node --cpu-prof`, e.g. `npm run bench -- --profile`):
 * self time by package or source file, and the hottest functions, as shares of the time not idle.
 *
 *   npx tsx test/bench/profile-summary.ts FILE.cpuprofile [--top N] [--skip SECONDS] [--steps]
 *
 * `--skip` leaves out the first seconds (start-up, seeding), so that only the load is summarised.
 * `--steps` also shares the gateway's time out by the steps of a request (`GATEWAY_STEPS`).
 */

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const { values: options, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '25' }, skip: { type: 'string', default: '0' }, steps: { type: 'boolean', default: false } },
});
const file = positionals[0];
if (!file) throw new Error('usage: profile-summary.ts FILE.cpuprofile [--top N] [--skip SECONDS] [--steps]');
const top = Number(options.top);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;

const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parentOf = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);

/** Self time per node, and time per node counting everything it called (each sample once per function on the stack). */
const selfMicros = new Map<number, number>();
const samplesKept: [number, number][] = [];
let elapsed = 0;
let idleMicros = 0;
profile.samples.forEach((id, index) => {
  const delta = profile.timeDeltas[index] ?? 0;
  elapsed += delta;
  if (elapsed < Number(options.skip) * 1e6) return;
  // Shares are of busy time: CPU per request is what the benchmark compares, and a peer idles between its scenarios.
  if (byId.get(id)!.callFrame.functionName === '(idle)') {
    idleMicros += delta;
    return;
  }
  selfMicros.set(id, (selfMicros.get(id) ?? 0) + delta);
  samplesKept.push([id, delta]);
});
const total = [...selfMicros.values()].reduce((sum, value) => sum + value, 0);

function tally(key: (node: ProfileNode) => string): [string, number][] {
  const sums = new Map<string, number>();
  for (const [id, micros] of selfMicros) {
    const name = key(byId.get(id)!);
    sums.set(name, (sums.get(name) ?? 0) + micros);
  }
  return [...sums].sort((a, b) => b[1] - a[1]).slice(0, top);
}

const percent = (micros: number) => `${((micros / total) * 100).toFixed(1).padStart(5)}%`;
const print = (title: string, rows: [string, number][]) => {
  process.stdout.write(`\n${title}\n`);
  for (const [name, micros] of rows) process.stdout.write(`  ${percent(micros)}  ${name}\n`);
};

const functionKey = ({ callFrame }: ProfileNode) =>
  `${callFrame.functionName || '(anonymous)'}  ${placeOf(callFrame.url, callFrame.functionName)}:${callFrame.lineNumber + 1}`;

/** Time with the function anywhere on the stack (within one synchronous run; awaits cut the stack). */
function inclusive(): [string, number][] {
  const sums = new Map<string, number>();
  for (const [id, micros] of samplesKept) {
    const seen = new Set<string>();
    for (let node: number | undefined = id; node !== undefined; node = parentOf.get(node)) {
      const key = functionKey(byId.get(node)!);
      if (seen.has(key)) continue;
      seen.add(key);
      sums.set(key, (sums.get(key) ?? 0) + micros);
    }
  }
  return [...sums]
    .filter(([key]) => !key.startsWith('(root)'))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top);
}

process.stdout.write(`${file}: ${(total / 1e6).toFixed(2)} s busy (shares below are of that), ${(idleMicros / 1e6).toFixed(2)} s idle\n`);
print(
  'self time by package or file',
  tally(({ callFrame }) => placeOf(callFrame.url, callFrame.functionName)),
);
print('self time by function', tally(functionKey));
print('total time by function (self and callees)', inclusive());

function steps(): [string, number][] {
  const sums = new Map<string, number>();
  for (const [id, micros] of samplesKept) {
    let step: string | undefined;
    for (let node: number | undefined = id; node !== undefined && step === undefined; node = parentOf.get(node)) {
      const { url, functionName } = byId.get(node)!.callFrame;
      if (functionName === '(garbage collector)') step = 'garbage collection';
      else step = GATEWAY_STEPS.find(([, pattern]) => pattern.test(url))?.[0];
    }
    step ??= "Node's HTTP server, sockets and event loop";
    sums.set(step, (sums.get(step) ?? 0) + micros);
  }
  return [...sums].sort((a, b) => b[1] - a[1]);
}

if (options.steps) print('busy time by step of a request (deepest matching frame)', steps());
