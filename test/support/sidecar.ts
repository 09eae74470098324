import type { Clock } from '../../src/clock.js';
import { loadSidecarConfig } from '../../src/config.js';
import { createLogger, type Logger } from '../../src/logger.js';
import { type RunningSidecar, startSidecar } from '../../src/rest/sidecar.js';

export type TestSidecar = RunningSidecar;

/** The REST layer as a separate HTTP server in front of `upstream`, on 127.0.0.1. */
export async function startTestSidecar(
  upstream: string,
  options: {
    timeoutMs?: number;
    corsOrigins?: string[];
    basePath?: string;
    logger?: Logger;
    clock?: Clock;
    environment?: Record<string, string>;
  } = {},
): Promise<RunningSidecar> {
  return startSidecar({
    config: {
      ...loadSidecarConfig({}, { PORT: '0', HOST: '127.0.0.1', ...options.environment }),
      corsOrigins: options.corsOrigins ?? [],
      restBasePath: options.basePath,
    },
    upstream: new URL(upstream),
    timeoutMs: options.timeoutMs ?? 5_000,
    logger: options.logger ?? createLogger({ logLevel: 'silent' }),
    clock: options.clock,
  });
}
