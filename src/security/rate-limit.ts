import type { Request, RequestHandler, Response } from 'express';
import { BurstyRateLimiter, RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { Caller } from '../auth/authenticator.js';
import type { RestRoute } from '../rest/route.js';

const RATE_LIMITED_TEXT = 'too many requests';
/** Beyond the steady rate, a caller may spend this many seconds' worth of requests in any burst window. */
const BURST_SECONDS = 2;
const BURST_WINDOW_SECONDS = 10;
/**
 * Before authentication one address may make this many times a caller's rate: many
 * callers share an address behind NAT or a proxy, so this only stops a single host's flood.
 */
const ADDRESS_FACTOR = 10;

/** The request went over a rate limit; `retryAfterSeconds` is when the next one is allowed. */
export class RateLimitedError extends Error {
  override readonly name = 'RateLimitedError';
  constructor(readonly retryAfterSeconds: number) {
    super(RATE_LIMITED_TEXT);
  }
}

export interface RateLimits {
  /** Before authentication: counts every request against its client address. */
  byAddress: RequestHandler;
  /** After authentication: counts the request against its caller; throws `RateLimitedError` when over. */
  admitCaller(caller: Caller): Promise<void>;
}

/**
 * `requestsPerSecond` per caller, with bursts (see `BURST_SECONDS`); 0 turns limiting off.
 * Counters live in this process's memory: each instance limits on its own.
 * `routes` give the 429 body of each legacy endpoint its usual failure field.
 */
export function createRateLimits(requestsPerSecond: number, routes: readonly RestRoute[]): RateLimits {
  if (requestsPerSecond === 0) return { byAddress: (_request, _response, next) => next(), admitCaller: async () => {} };
  const perCaller = new Limiter('caller', requestsPerSecond);
  const perAddress = new Limiter('address', requestsPerSecond * ADDRESS_FACTOR);
  const failureFields = new Map(routes.map((route) => [route.path, route.failureField]));
  return {
    async byAddress(request, response, next) {
      try {
        await perAddress.take(request.ip ?? 'unknown');
      } catch (error) {
        if (!(error instanceof RateLimitedError)) throw error;
        return sendRateLimited(response, error, rateLimitedBody(request, error, failureFields));
      }
      next();
    },
    admitCaller: (caller) => perCaller.take(String(caller.userId)),
  };
}

/** 429 with `Retry-After` and the endpoint's own JSON body. */
export function sendRateLimited(response: Response, error: RateLimitedError, body: object): void {
  response.status(429).set('Retry-After', String(error.retryAfterSeconds)).json(body);
}

export function graphqlRateLimitedBody(error: RateLimitedError): object {
  return { errors: [{ message: error.message, extensions: { code: 'RATE_LIMITED', retryAfter: error.retryAfterSeconds } }] };
}

/** The RATE_LIMITED error of a GraphQL result from this service (the sidecar forwards to it), if any. */
export function rateLimitedErrorIn(result: { errors?: readonly { extensions?: Record<string, unknown> }[] }): RateLimitedError | undefined {
  const extensions = result.errors?.find((error) => error.extensions?.code === 'RATE_LIMITED')?.extensions;
  if (extensions === undefined) return undefined;
  const { retryAfter } = extensions;
  return new RateLimitedError(typeof retryAfter === 'number' && retryAfter >= 1 ? Math.ceil(retryAfter) : 1);
}

function rateLimitedBody(request: Request, error: RateLimitedError, failureFields: Map<string, string>): object {
  const path = request.path.toLowerCase().replace(/(.)\/+$/, '$1');
  if (path === '/graphql' || path.startsWith('/graphql/')) return graphqlRateLimitedBody(error);
  return { status: false, [failureFields.get(path) ?? 'error']: error.message };
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
      throw new RateLimitedError(Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)));
    }
  }
}
