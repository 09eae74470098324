import autocannon, { type Result } from 'autocannon';

import type { Scenario } from './scenarios.js';

export const CONNECTIONS = 16;

export interface Sample {
  rps: number;
  p50_ms: number;
  p99_ms: number;
  /** Successful requests in the run. */
  requests: number;
  /** CPU time per request of the answering process and of the embedded engine, in microseconds. */
  server_cpu_us?: number;
  db_cpu_us?: number;
}

/**
 * Drives one scenario at `CONNECTIONS` concurrent keep-alive connections for
 * `seconds`. Latencies are taken from every response (autocannon's own
 * histogram rounds to whole milliseconds); any error or non-2xx answer fails
 * the run, since a fast failure is not a result.
 */
export async function drive(base: string, scenario: Scenario, seconds: number): Promise<Sample> {
  const latencies: number[] = [];
  const result = await load(base, scenario, { duration: seconds }, (milliseconds) => latencies.push(milliseconds));
  latencies.sort((a, b) => a - b);
  return {
    rps: result['2xx'] / result.duration,
    p50_ms: percentile(latencies, 0.5),
    p99_ms: percentile(latencies, 0.99),
    requests: result['2xx'],
  };
}

function percentile(sorted: readonly number[], fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)]!;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** Sends `amount` requests of one scenario at `CONNECTIONS` concurrent keep-alive connections; fails as `drive` does. */
export async function send(base: string, scenario: Scenario, amount: number): Promise<void> {
  await load(base, scenario, { amount }, () => undefined);
}

async function load(
  base: string,
  scenario: Scenario,
  extent: { duration: number } | { amount: number },
  answered: (milliseconds: number) => void,
): Promise<Result> {
  const result = await new Promise<Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: `${base}${scenario.path}`,
        connections: CONNECTIONS,
        ...extent,
        method: scenario.method,
        headers: scenario.headers,
        body: scenario.body,
        timeout: 10,
      },
      (error, finished) => (error ? reject(error) : resolve(finished)),
    );
    instance.on('response', (_client: unknown, _status: number, _bytes: number, milliseconds: number) => answered(milliseconds));
  });
  if (result.errors > 0 || result.non2xx > 0) {
    throw new Error(
      `${scenario.name}: ${result.errors} errors, ${result.non2xx} non-2xx answers (${JSON.stringify(result.statusCodeStats)})`,
    );
  }
  return result;
}
