import { createHash, timingSafeEqual } from 'node:crypto';

import type { RequestHandler } from 'express';
import type { Registry } from 'prom-client';

import { unauthenticated } from '../errors.js';

/** Serves the registry in Prometheus text format; with a token, only to `Authorization: Bearer <token>`. */
export function metricsEndpoint(registry: Registry, token: string | undefined): RequestHandler {
  const expected = token === undefined ? undefined : digest(token);
  return async (request, response) => {
    if (expected !== undefined && !presents(request.get('authorization'), expected)) throw unauthenticated('metrics');
    response
      .set('Cache-Control', 'no-store')
      .type(registry.contentType)
      .send(await registry.metrics());
  };
}

function presents(authorization: string | undefined, expected: Buffer): boolean {
  const match = /^bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  // Comparing digests keeps the comparison constant-time whatever the lengths.
  return match !== null && timingSafeEqual(digest(match[1]!), expected);
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
