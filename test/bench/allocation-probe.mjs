// @ts-check
/**
 * Loaded into a server under measurement (`node --import ./test/bench/allocation-probe.mjs …`) by
 * `allocations.ts`; nothing of it is in the server's own code. On each SIGUSR2 it prints one line
 * on stderr with totals since the process started: the bytes allocated on the V8 heap, the garbage
 * collections, and what the scavenges found still alive (copied within the young generation or
 * promoted out of it: what makes a scavenge dear, where garbage costs it nothing). Allocated bytes
 * are the heap in use now plus what every collection freed (each one's heap in use before it,
 * minus after it, from V8's GC profiler): exact, and alike on a loaded machine and a quiet one.
 *
 * With ALLOCATION_PROFILE=DIR, V8's sampling heap profiler runs too, and each mark writes the
 * profile of what was allocated since the last one to DIR/<pid>-<mark>.heapprofile (as Chrome's
 * DevTools open it), named in its line. It counts what was collected since as well, unless
 * ALLOCATION_PROFILE_SURVIVORS=1: then only what outlived the scavenges, i.e. was promoted. The
 * profiler's own work counts in the totals then.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';
import v8 from 'node:v8';

/** One sample per this many bytes allocated, on average. */
const SAMPLING_INTERVAL_BYTES = 4096;

let freed = 0;
const collections = { scavenges: 0, markCompacts: 0, other: 0, pauseMicros: 0, survivedBytes: 0, promotedBytes: 0 };

/** The bytes a space holds in use, from one side of a collection's statistics. */
const usedIn = (side, space) => side.heapSpaceStatistics.find(({ spaceName }) => spaceName === space)?.spaceUsedSize ?? 0;
let profiler = new v8.GCProfiler();
profiler.start();

/** Takes the collections since the last call into the totals. */
function settle() {
  const { statistics } = profiler.stop();
  for (const { gcType, cost, beforeGC, afterGC } of statistics) {
    freed += beforeGC.heapStatistics.usedHeapSize - afterGC.heapStatistics.usedHeapSize;
    if (gcType === 'Scavenge' || gcType === 'MinorMarkSweep') {
      collections.scavenges++;
      // What a scavenge had to keep: copied within the young generation, or promoted to the old one.
      const promoted = usedIn(afterGC, 'old_space') - usedIn(beforeGC, 'old_space');
      collections.survivedBytes += usedIn(afterGC, 'new_space') + promoted;
      collections.promotedBytes += promoted;
    } else if (gcType === 'MarkSweepCompact') collections.markCompacts++;
    else collections.other++;
    collections.pauseMicros += cost;
  }
  profiler = new v8.GCProfiler();
  profiler.start();
}

const profileDirectory = process.env.ALLOCATION_PROFILE;
const session = profileDirectory ? new Session() : undefined;
session?.connect();
let marks = 0;

/** Ends the running profile, if any, writing it: its file. The session answers synchronously. */
function profileSinceLastMark() {
  if (session === undefined || profileDirectory === undefined) return undefined;
  let file;
  if (marks > 1) {
    session.post('HeapProfiler.stopSampling', (error, result) => {
      if (error) throw error;
      file = join(profileDirectory, `${process.pid}-${marks}.heapprofile`);
      writeFileSync(file, JSON.stringify(result.profile));
    });
  }
  session.post('HeapProfiler.startSampling', {
    samplingInterval: SAMPLING_INTERVAL_BYTES,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: process.env.ALLOCATION_PROFILE_SURVIVORS !== '1',
  });
  return file;
}

process.on('SIGUSR2', () => {
  settle();
  marks++;
  const line = { allocatedBytes: v8.getHeapStatistics().used_heap_size + freed, ...collections, profile: profileSinceLastMark() };
  process.stderr.write(`[allocation-probe] ${JSON.stringify(line)}\n`);
});
