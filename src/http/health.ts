import { Router } from 'express';

import type { Shutdown } from './lifecycle.js';

/** How long `/readyz` waits for its dependency's answer. */
export const READINESS_TIMEOUT_MS = 1_000;

/** What a server needs in order to serve: the database for the gateway, the upstream for the sidecar. */
export interface Dependency {
  /** Resolves when it answers within `timeoutMs`. */
  ping(timeoutMs: number): Promise<void>;
  /** `/readyz`'s status when it does not, e.g. `database unavailable`. */
  unavailable: string;
}

/** What `/readyz` reports besides its status: the gateway's open WebSockets and subscriptions. */
export type ReadinessDetails = () => Record<string, number>;

/**
 * `/healthz`: the process is up and serving (liveness). `/readyz`: the dependency answers in
 * time and no stop has begun (readiness), with `details`. Neither needs credentials, and
 * neither is cached.
 */
export function healthRoutes(dependency: Dependency, shutdown: Pick<Shutdown, 'stopping'>, details: ReadinessDetails = () => ({})): Router {
  const router = Router();
  router.get('/healthz', (_request, response) => {
    response.set('Cache-Control', 'no-store').json({ status: 'ok' });
  });
  router.get('/readyz', async (_request, response) => {
    response.set('Cache-Control', 'no-store');
    if (shutdown.stopping) {
      response.status(503).json({ status: 'stopping', ...details() });
      return;
    }
    try {
      await dependency.ping(READINESS_TIMEOUT_MS);
      response.json({ status: 'ready', ...details() });
    } catch {
      response.status(503).json({ status: dependency.unavailable, ...details() });
    }
  });
  return router;
}
