// @ts-check
/**
 * Loaded into a live server under measurement (`node --expose-gc --import
 * ./test/bench/memory-probe.mjs …`, see `MEMORY_PROBE` in `processes.ts`); nothing of it is in
 * the server's own code. On each SIGUSR2 it runs full collections until the heap stops shrinking,
 * then prints one line on stderr with the V8 heap still in use (and, for a closer look, the heap
 * committed and the memory held outside it, `process.memoryUsage()`'s). An idle server collects its
 * garbage only when something next allocates, so without this a memory figure would count what
 * opening the connections left behind, as much or as little as the collector's timing had it.
 */
import v8 from 'node:v8';

/** Full collections at most: a weak callback run by one can free more for the next. */
const MOST_COLLECTIONS = 5;

if (typeof globalThis.gc !== 'function') throw new Error('memory-probe.mjs needs node --expose-gc');
const collect = /** @type {() => void} */ (globalThis.gc);

process.on('SIGUSR2', () => {
  let used = Number.POSITIVE_INFINITY;
  for (let count = 0; count < MOST_COLLECTIONS; count++) {
    collect();
    const now = v8.getHeapStatistics().used_heap_size;
    if (now >= used) break;
    used = now;
  }
  const { heapTotal, external, arrayBuffers } = process.memoryUsage();
  process.stderr.write(`[memory-probe] ${JSON.stringify({ heapUsed: used, heapTotal, external, arrayBuffers })}\n`);
});
