/**
 * What durability costs a write: the built gateway (`dist/main.js`, its demo data) with its data
 * in a fresh DATA_DIR against DATA_DIR=memory, interleaved, `--rounds` times each (default 3):
 * per round, `--renames` renames (default 400) from 4 clients at once after a warm-up of 50, the
 * gateway's CPU time (its every thread, from /proc) per rename, and the rename's p50 and p99.
 *
 *   npx tsc -b tsconfig.build.json && npx tsx test/bench/durability.ts [--renames N] [--rounds N]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { freePort, startNode, waitForOutput } from './processes.js';

const { values } = parseArgs({ options: { renames: { type: 'string', default: '400' }, rounds: { type: 'string', default: '3' } } });
const RENAMES = Number(values.renames);
const ROUNDS = Number(values.rounds);
const CLIENTS = 4;
const WARM_UP = 50;

interface Round {
  cpuMs: number;
  p50: number;
  p99: number;
}

async function round(dataDir: string): Promise<Round> {
  const port = await freePort();
  const gateway = startNode('gateway', ['dist/main.js'], {
    env: { DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', RATE_LIMIT: '0', JWT_SECRET: '' },
  });
  try {
    await waitForOutput(gateway, /Try:/);
    const token = /^ {2}(ey[\w-]+\.[\w-]+\.[\w-]+)$/m.exec(gateway.output())![1]!;
    const url = `http://127.0.0.1:${port}`;
    const rename = async (i: number): Promise<number> => {
      const started = performance.now();
      const response = await fetch(`${url}/conversation/rename`, {
        method: 'POST',
        headers: { authorization: token, 'content-type': 'application/json' },
        body: JSON.stringify({ id: 1 + (i % 3), name: `name ${i}` }),
      });
      if (!(await response.text()).startsWith('{"status":true')) throw new Error('a rename failed');
      return performance.now() - started;
    };
    for (let i = 0; i < WARM_UP; i++) await rename(i);
    const before = gateway.cpuSeconds();
    const times: number[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (next < RENAMES) times.push(await rename(next++));
      }),
    );
    const cpuMs = ((gateway.cpuSeconds() - before) * 1000) / RENAMES;
    times.sort((a, b) => a - b);
    return { cpuMs, p50: times[Math.floor(RENAMES / 2)]!, p99: times[Math.floor(RENAMES * 0.99)]! };
  } finally {
    await gateway.stop();
  }
}

const results: Record<'DATA_DIR' | 'memory', Round[]> = { DATA_DIR: [], memory: [] };
for (let i = 0; i < ROUNDS; i++) {
  const scratch = await mkdtemp(join(tmpdir(), 'chat-gateway-durability-'));
  try {
    results.DATA_DIR.push(await round(join(scratch, 'data')));
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  results.memory.push(await round('memory'));
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const spread = (values: number[]): string => `${Math.min(...values).toFixed(2)}-${Math.max(...values).toFixed(2)}`;
console.log(`| storage | CPU ms per rename (median, spread) | p50 ms | p99 ms (median, spread) |`);
console.log(`|---|---|---|---|`);
for (const [name, rounds] of Object.entries(results)) {
  const cpu = rounds.map((r) => r.cpuMs);
  const p99 = rounds.map((r) => r.p99);
  console.log(
    `| ${name} | ${median(cpu).toFixed(2)} (${spread(cpu)}) | ${median(rounds.map((r) => r.p50)).toFixed(1)} | ${median(p99).toFixed(1)} (${spread(p99)}) |`,
  );
}
