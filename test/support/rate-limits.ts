/**
 * The most one rate-limit counter of `perSecond` (with a burst of two seconds' worth in any ten,
 * as `src/security/rate-limit.ts` sets it) lets through in `seconds`, however the requests spread
 * out: one steady window a second and one burst window each ten seconds, each opened full. A test
 * whose flood is larger than this for its own timeout sees requests limited on any machine that
 * finishes it at all: it judges by counts, not by how fast the requests arrived.
 */
export function mostServedWithin(perSecond: number, seconds: number): number {
  return perSecond * (seconds + 1) + 2 * perSecond * (Math.floor(seconds / 10) + 1);
}

/** The per-address counter's rate for a `RATE_LIMIT`: one address may carry many callers. */
export const addressRate = (rateLimit: number) => rateLimit * 10;
