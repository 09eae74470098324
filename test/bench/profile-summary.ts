import { readFileSync } from 'node:fs';

/**
 * Summarises a V8 `.cpuprofile` (from `node --cpu-prof`, e.g. `npm run bench -- --profile`):
 * self time by package or source file, and the hottest functions.
 *
 *   npx tsx test/bench/profile-summary.ts FILE.cpuprofile [--top N]
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

const [file, ...rest] = process.argv.slice(2);
if (!file) throw new Error('usage: profile-summary.ts FILE.cpuprofile [--top N]');
const top = rest[0] === '--top' ? Number(rest[1]) : 25;
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;

const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const selfMicros = new Map<number, number>();
profile.samples.forEach((id, index) => selfMicros.set(id, (selfMicros.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0)));
const total = [...selfMicros.values()].reduce((sum, value) => sum + value, 0);

/** `node_modules/@scope/name`, `node_modules/name`, a project file, `node:…` or a V8 category such as (garbage collector). */
function placeOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  const modules = url.lastIndexOf('node_modules/');
  if (modules >= 0) {
    const parts = url.slice(modules + 'node_modules/'.length).split('/');
    return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
  }
  if (url.startsWith('node:')) return url;
  const project = url.search(/\/(src|dist|test)\//);
  return project >= 0 ? url.slice(project + 1) : url;
}

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

process.stdout.write(`${file}: ${(total / 1e6).toFixed(2)} s sampled\n`);
print('self time by package or file', tally(({ callFrame }) => placeOf(callFrame.url, callFrame.functionName)));
print(
  'self time by function',
  tally(({ callFrame }) => `${callFrame.functionName || '(anonymous)'}  ${placeOf(callFrame.url, callFrame.functionName)}:${callFrame.lineNumber + 1}`),
);
