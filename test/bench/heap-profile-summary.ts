import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

import { GATEWAY_STEPS, placeOf } from './request-steps.js';

/**
 * Summarises a V8 sampling heap profile (`.heapprofile`, from `allocations.ts --profile`): the
 * bytes allocated by package or source file, by function, and by step of a request, each as
 * bytes per request and as a share of all.
 *
 *   npx tsx test/bench/heap-profile-summary.ts FILE.heapprofile [--requests N] [--top N] [--steps]
 *
 * `--requests` is how many requests the profile covers (10 000 unless given).
 */

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  id: number;
  children: HeapNode[];
}

const { values: options, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    top: { type: 'string', default: '30' },
    requests: { type: 'string', default: '10000' },
    steps: { type: 'boolean', default: false },
  },
});
const file = positionals[0];
if (!file) throw new Error('usage: heap-profile-summary.ts FILE.heapprofile [--requests N] [--top N] [--steps]');
const top = Number(options.top);
const requests = Number(options.requests);
const { head } = JSON.parse(readFileSync(file, 'utf8')) as { head: HeapNode };

/** Every node with the frames above it, outermost first. */
const allocations: { node: HeapNode; stack: HeapNode[] }[] = [];
(function walk(node: HeapNode, stack: HeapNode[]) {
  if (node.selfSize > 0) allocations.push({ node, stack });
  for (const child of node.children) walk(child, [...stack, child]);
})(head, []);
const total = allocations.reduce((sum, { node }) => sum + node.selfSize, 0);

const print = (title: string, sums: Map<string, number>) => {
  process.stdout.write(`\n${title}\n`);
  for (const [name, bytes] of [...sums].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    const share = `${((bytes / total) * 100).toFixed(1).padStart(5)}%`;
    process.stdout.write(`  ${(bytes / requests).toFixed(0).padStart(8)} B/req ${share}  ${name}\n`);
  }
};
function tally(key: (node: HeapNode, stack: HeapNode[]) => string): Map<string, number> {
  const sums = new Map<string, number>();
  for (const { node, stack } of allocations) sums.set(key(node, stack), (sums.get(key(node, stack)) ?? 0) + node.selfSize);
  return sums;
}
const functionKey = ({ callFrame }: HeapNode) =>
  `${callFrame.functionName || '(anonymous)'}  ${placeOf(callFrame.url, callFrame.functionName)}:${callFrame.lineNumber + 1}`;

process.stdout.write(`${file}: ${(total / requests).toFixed(0)} bytes sampled per request over ${requests} requests\n`);
print(
  'allocated by package or file',
  tally(({ callFrame }) => placeOf(callFrame.url, callFrame.functionName)),
);
print('allocated by function', tally(functionKey));
print(
  'allocated by function and its caller',
  tally((node, stack) => `${functionKey(node)}  ←  ${stack.length > 1 ? functionKey(stack[stack.length - 2]!) : ''}`),
);
if (options.steps) {
  // As the CPU profile's steps: the deepest frame on the stack that belongs to one.
  print(
    'allocated by step of a request (deepest matching frame)',
    tally((_node, stack) => {
      for (let index = stack.length - 1; index >= 0; index--) {
        const step = GATEWAY_STEPS.find(([, pattern]) => pattern.test(stack[index]!.callFrame.url))?.[0];
        if (step !== undefined) return step;
      }
      return "Node's HTTP server, sockets and event loop";
    }),
  );
}
