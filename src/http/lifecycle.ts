import type { Server, ServerResponse } from 'node:http';

import { type Clock, systemClock } from '../clock.js';

/** Busy connections still open this long after a drain began are cut (by `drainable` and by Apollo Server's drain alike). */
export const DRAIN_GRACE_MS = 10_000;

/**
 * A server's stop as orchestrators expect it: `/readyz` answers 503 from the
 * moment it begins, while requests are still served for `delayMs`, so that load balancers stop
 * sending before the port closes. Then the caller closes the port and its resources.
 */
export class Shutdown {
  stopping = false;

  constructor(
    private readonly delayMs: number,
    /** Times the delay; tests pass one they move by hand. */
    private readonly clock: Pick<Clock, 'schedule'> = systemClock,
  ) {}

  /** Turns readiness off and resolves once the delay is over (the server, still listening, keeps the process alive meanwhile). */
  async begin(): Promise<void> {
    this.stopping = true;
    // No delay, nothing to wait for: a clock a test moves by hand is not asked to.
    if (this.delayMs > 0) await new Promise<void>((resolve) => this.clock.schedule(resolve, this.delayMs));
  }
}

/**
 * Lets a server stop without cutting a request: `drain()` stops accepting, closes idle
 * keep-alive connections at once and each busy one after its response, and resolves when the
 * last one is closed (busy ones are cut after ten seconds). For servers that Apollo Server does
 * not drain itself.
 */
export function drainable(server: Server): { drain(): Promise<void> } {
  const answering = new Set<ServerResponse>();
  let draining = false;
  server.on('request', (_request, response: ServerResponse) => {
    if (draining) response.shouldKeepAlive = false;
    answering.add(response);
    // A response closes once: `on` rather than `once`, whose wrapper a live stream would hold besides.
    response.on('close', () => {
      answering.delete(response);
      if (draining) server.closeIdleConnections();
    });
  });
  return {
    drain() {
      draining = true;
      // Responses not started yet end with `Connection: close`; those under way close after their end.
      for (const response of answering) if (!response.headersSent) response.shouldKeepAlive = false;
      const closed = new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
      server.closeIdleConnections();
      const cut = setTimeout(() => server.closeAllConnections(), DRAIN_GRACE_MS).unref();
      return closed.finally(() => clearTimeout(cut));
    },
  };
}

/** Listens, or fails with one sentence (a port in use is the usual reason). */
export async function listen(server: Server, port: number, host: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(error.code === 'EADDRINUSE' ? new Error(`port ${port} on ${host} is already in use`) : error),
    );
    server.listen(port, host, resolve);
  });
}
