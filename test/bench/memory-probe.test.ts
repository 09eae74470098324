import { afterEach, describe, expect, it } from 'vitest';

import { type Child, collectedHeap, MEMORY_PROBE, startNode, waitForOutput } from './processes.js';

/**
 * A process that keeps 20 MB of strings alive on `+`, and lets them go (garbage, not collected
 * yet: nothing else allocates) on `-`, printing its heap in use after each (told over IPC).
 */
const HOLDER = `
let held = [];
const used = () => process.memoryUsage().heapUsed;
process.on('message', (input) => {
  if (input === '+') held = Array.from({ length: 200_000 }, (_, index) => 'x'.repeat(50) + index);
  else held = [];
  console.log('heap ' + used());
});
console.log('ready');
`;

let child: Child | undefined;
afterEach(async () => {
  await child?.stop();
  child = undefined;
});

describe("the benchmark's memory probe", () => {
  it('answers the heap a full collection leaves: what is held counts, garbage left behind does not', async () => {
    child = startNode('holder', [...MEMORY_PROBE, '--input-type=module', '-e', HOLDER], { ipc: true });
    await waitForOutput(child, /ready/);
    const empty = (await collectedHeap(child)).used;

    child.process.send('+');
    await waitForOutput(child, /heap \d+/);
    const holding = (await collectedHeap(child)).used;
    expect(holding - empty).toBeGreaterThan(15_000_000);

    child.process.send('-');
    const uncollected = Number((await waitForOutput(child, /heap (\d+)\n[^]*heap (\d+)/))[2]);
    // Still in the heap as the process sees it, until something collects it.
    expect(uncollected - empty).toBeGreaterThan(15_000_000);
    expect((await collectedHeap(child)).used - empty).toBeLessThan(2_000_000);
  });
});
