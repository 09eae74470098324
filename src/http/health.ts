import { Router } from 'express';
import type { Database } from '../db/database.js';

/** How long `/readyz` waits for the database's answer to a ping. */
export const READINESS_TIMEOUT_MS = 1_000;

/**
 * `/healthz`: the process is up and serving (liveness). `/readyz`: the database answers
 * a ping in time (readiness). Neither needs credentials, and neither is cached.
 */
export function healthRoutes(database: Pick<Database, 'ping'>): Router {
  const router = Router();
  router.get('/healthz', (_request, response) => {
    response.set('Cache-Control', 'no-store').json({ status: 'ok' });
  });
  router.get('/readyz', async (_request, response) => {
    response.set('Cache-Control', 'no-store');
    try {
      await database.ping(READINESS_TIMEOUT_MS);
      response.json({ status: 'ready' });
    } catch {
      response.status(503).json({ status: 'database unavailable' });
    }
  });
  return router;
}
