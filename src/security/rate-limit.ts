import type { RequestHandler } from 'express';
import ipaddr from 'ipaddr.js';
import { BurstyRateLimiter, RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { callerOf } from '../auth/require-caller.js';
import { rateLimited } from '../errors.js';

/** Beyond the steady rate, a caller may spend this many seconds' worth of requests in any burst window. */
const BURST_SECONDS = 2;
const BURST_WINDOW_SECONDS = 10;
/**
 * Before authentication one address may make this many times a caller's rate: many
 * callers share an address behind NAT or a proxy, so this only stops a single host's flood.
 */
const ADDRESS_FACTOR = 10;

/** Steps that count a request and throw the rate-limited failure when it is over its limit. */
export interface RateLimits {
  /** Before authentication: counts every request against its client address (an IPv6 one by its /64). */
  byAddress: RequestHandler;
  /** After authentication: counts the request against its caller. */
  byCaller: RequestHandler;
}

/**
 * `requestsPerSecond` per caller, with bursts (see `BURST_SECONDS`); 0 turns limiting off.
 * Counters live in this process's memory: each instance limits on its own.
 */
export function createRateLimits(requestsPerSecond: number): RateLimits {
  if (requestsPerSecond === 0) {
    const pass: RequestHandler = (_request, _response, next) => next();
    return { byAddress: pass, byCaller: pass };
  }
  const perCaller = new Limiter('caller', requestsPerSecond);
  const perAddress = new Limiter('address', requestsPerSecond * ADDRESS_FACTOR);
  return {
    async byAddress(request, _response, next) {
      await perAddress.take(addressKey(request.ip));
      next();
    },
    async byCaller(_request, response, next) {
      await perCaller.take(String(callerOf(response).userId));
      next();
    },
  };
}

/**
 * The key an address is counted under: an IPv4 address (IPv4-mapped IPv6 included) as itself, an
 * IPv6 address by its /64, the smallest block a host is usually given (it can rotate freely inside).
 */
export function addressKey(address: string | undefined): string {
  if (address === undefined || !ipaddr.isValid(address)) return 'unknown';
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  return `${(parsed as ipaddr.IPv6).parts.slice(0, 4).map((part) => part.toString(16)).join(':')}::/64`;
}

class Limiter {
  private readonly limiter: BurstyRateLimiter;

  constructor(keyPrefix: string, perSecond: number) {
    this.limiter = new BurstyRateLimiter(
      new RateLimiterMemory({ keyPrefix, points: perSecond, duration: 1 }),
      new RateLimiterMemory({ keyPrefix: `${keyPrefix}-burst`, points: perSecond * BURST_SECONDS, duration: BURST_WINDOW_SECONDS }),
    );
  }

  async take(key: string): Promise<void> {
    try {
      await this.limiter.consume(key);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      throw rateLimited(Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)));
    }
  }
}
