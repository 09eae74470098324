import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '../../src/logger.js';
import { createSidecarApp } from '../../src/rest/sidecar.js';

export interface TestSidecar {
  url: string;
  stop(): Promise<void>;
}

/** The REST layer as a separate HTTP server in front of `upstream`, on 127.0.0.1. */
export async function startTestSidecar(
  upstream: string,
  options: { timeoutMs?: number; corsOrigins?: string[]; basePath?: string } = {},
): Promise<TestSidecar> {
  const app = createSidecarApp({
    upstream: new URL(upstream),
    timeoutMs: options.timeoutMs ?? 5_000,
    trustProxy: false,
    corsOrigins: options.corsOrigins ?? [],
    basePath: options.basePath,
    logger: createLogger({ logLevel: 'silent' }),
  });
  const server: Server = await new Promise((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
