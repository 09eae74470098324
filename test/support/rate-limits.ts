/**
 * How many requests one rate-limit counter of `perSecond` lets through at one instant of its clock,
 * as `src/security/rate-limit.ts` sets it: one second's worth, and a burst of two seconds' worth
 * more. A test that starts the gateway on a clock it moves by hand sees exactly this many of a
 * flood served, however slowly the machine sends it.
 */
export const servedAtOnce = (perSecond: number) => perSecond + 2 * perSecond;

/** The per-address counter's rate for a `RATE_LIMIT`: one address may carry many callers. */
export const addressRate = (rateLimit: number) => rateLimit * 10;
