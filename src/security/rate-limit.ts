import type { RequestHandler } from 'express';
import ipaddr from 'ipaddr.js';
import type { Db } from 'mongodb';
import { BurstyRateLimiter, RateLimiterMemory, RateLimiterMongo, RateLimiterRes } from 'rate-limiter-flexible';

import type { Clock } from '../clock.js';
import { rateLimited } from '../errors.js';

/** Beyond the steady rate, a caller may spend this many seconds' worth of requests in any burst window. */
const BURST_SECONDS = 2;
const BURST_WINDOW_SECONDS = 10;
/**
 * Before authentication one address may make this many times a caller's rate: many
 * callers share an address behind NAT or a proxy, so this only stops a single host's flood.
 */
const ADDRESS_FACTOR = 10;
/** The collection of shared counters (RATE_LIMIT_STORE=mongo): one document per caller and window. */
const COUNTERS_COLLECTION = 'rateLimits';

/** Steps that count a request and throw the rate-limited failure when it is over its limit. */
export interface RateLimits {
  /** Before authentication: counts every request against its client address (an IPv6 one by its /64). */
  byAddress: RequestHandler;
  /** The same count outside Express (WebSocket upgrades); throws the rate-limited failure. */
  countAddress(address: string | undefined): Promise<void>;
  /** After authentication, one request or subscribe message of the caller (the first check of the pipeline's admission sequence). */
  countCaller(userId: number): Promise<void>;
}

export interface RateLimitOptions {
  /** Per caller, with bursts (see `BURST_SECONDS`); 0 turns limiting off. */
  requestsPerSecond: number;
  /**
   * Where callers' counters live: given a database, there, so every instance on it counts one
   * budget per caller; otherwise in this process's memory, each instance counting on its own.
   */
  sharedIn?: Db;
  /**
   * The time the in-memory counters go by (the per-address ones always, the per-caller ones unless
   * they are shared): a test moves it by hand and judges a flood by counts. The shared counters go
   * by the system's time (rate-limiter-flexible's MongoDB store reads it itself).
   */
  clock: Pick<Clock, 'now'>;
}

/**
 * The rate limits. Per-address counters always live in memory: they only stop one host's flood,
 * which must not turn into database writes. Shared per-caller counters cost one database round
 * trip per authenticated request; a caller over the limit costs none (this instance blocks them in
 * memory until the window ends), and if the database fails, counting goes on in memory.
 */
export async function createRateLimits(options: RateLimitOptions): Promise<RateLimits> {
  const { requestsPerSecond, sharedIn, clock } = options;
  if (requestsPerSecond === 0) {
    const pass: RequestHandler = (_request, _response, next) => next();
    return { byAddress: pass, countAddress: async () => {}, countCaller: async () => {} };
  }
  const perCaller: Counter =
    sharedIn === undefined
      ? new WindowCounter(requestsPerSecond, clock)
      : await SharedCounter.create('caller', requestsPerSecond, sharedIn);
  const perAddress: Counter = new WindowCounter(requestsPerSecond * ADDRESS_FACTOR, clock);
  // An address is counted by its key (an IPv6 one by its /64), whether it made a request or a WebSocket upgrade.
  const countAddress = (address: string | undefined) => perAddress.take(addressKey(address));
  const countCaller = (userId: number) => perCaller.take(String(userId));
  return {
    async byAddress(request, _response, next) {
      await countAddress(request.ip);
      next();
    },
    countAddress,
    countCaller,
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
  return `${(parsed as ipaddr.IPv6).parts
    .slice(0, 4)
    .map((part) => part.toString(16))
    .join(':')}::/64`;
}

/**
 * A rate for one stream of messages (a WebSocket's): `perSecond` on average, and as many at once
 * as that makes in a burst window. Answers, as each message arrives, whether it is within the
 * rate: synchronously, so that a message over it is never handled (rate-limiter-flexible answers
 * through a promise, by when later messages of the same read are handled already). 0: no limit.
 * An object rather than a closure: every open socket holds one.
 */
export class MessageRate {
  // A token bucket: full at first, refilled at `perSecond`, one token a message.
  private readonly capacity: number;
  private tokens: number;
  private filledAt: number;

  constructor(
    private readonly perSecond: number,
    private readonly clock: Pick<Clock, 'now'>,
  ) {
    this.capacity = perSecond * BURST_WINDOW_SECONDS;
    this.tokens = this.capacity;
    this.filledAt = clock.now();
  }

  /** Takes one message's token: false, and nothing taken, when the stream is over its rate. */
  take(): boolean {
    if (this.perSecond === 0) return true;
    const now = this.clock.now();
    // A clock set back refills nothing (and takes nothing away).
    this.tokens = Math.min(this.capacity, this.tokens + (Math.max(0, now - this.filledAt) / 1000) * this.perSecond);
    this.filledAt = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

/** Counts one request of a key; throws the rate-limited failure when the key is over its limit. */
interface Counter {
  take(key: string): Promise<void>;
}

/** One fixed window of a key: opened by its first request, counting every request until it ends. */
interface Window {
  endsAt: number;
  count: number;
}

/**
 * Counters in this process's memory, on `clock`: per key a steady window of one second that lets
 * `perSecond` through and, for the requests past it, a burst window of `BURST_WINDOW_SECONDS` that
 * lets `BURST_SECONDS` seconds' worth more through. Each window opens at a key's first request
 * after the last one ended, and counts every request made in it, those refused included. A refusal
 * says to retry when the first of the two windows ends. (The rules of rate-limiter-flexible's
 * `BurstyRateLimiter` over two `RateLimiterMemory`, whose time cannot be injected.)
 */
export class WindowCounter implements Counter {
  private readonly steady = new Map<string, Window>();
  private readonly burst = new Map<string, Window>();
  private sweptAt: number;

  constructor(
    private readonly perSecond: number,
    private readonly clock: Pick<Clock, 'now'>,
  ) {
    this.sweptAt = clock.now();
  }

  take(key: string): Promise<void> {
    const now = this.clock.now();
    this.sweep(now);
    const steady = count(this.steady, key, now, 1_000);
    if (steady.count <= this.perSecond) return Promise.resolve();
    const burst = count(this.burst, key, now, BURST_WINDOW_SECONDS * 1_000);
    if (burst.count <= this.perSecond * BURST_SECONDS) return Promise.resolve();
    const retryAfterMs = Math.min(steady.endsAt, burst.endsAt) - now;
    return Promise.reject(rateLimited(Math.max(1, Math.ceil(retryAfterMs / 1_000))));
  }

  /** At most once a burst window, forgets the windows that have ended, so that idle keys cost no memory. */
  private sweep(now: number): void {
    if (now - this.sweptAt < BURST_WINDOW_SECONDS * 1_000 && now >= this.sweptAt) return;
    this.sweptAt = now;
    for (const windows of [this.steady, this.burst]) {
      for (const [key, window] of windows) if (window.endsAt <= now) windows.delete(key);
    }
  }
}

/** Counts a request in `key`'s window of `windows`, opening a new one of `durationMs` if the last has ended. */
function count(windows: Map<string, Window>, key: string, now: number, durationMs: number): Window {
  let window = windows.get(key);
  if (window === undefined || window.endsAt <= now) {
    window = { endsAt: now + durationMs, count: 0 };
    windows.set(key, window);
  }
  window.count += 1;
  return window;
}

/**
 * Counters in the database (RATE_LIMIT_STORE=mongo), with the same two windows as `WindowCounter`,
 * by rate-limiter-flexible's MongoDB store.
 */
class SharedCounter implements Counter {
  private constructor(private readonly limiter: BurstyRateLimiter) {}

  static async create(keyPrefix: string, perSecond: number, database: Db): Promise<SharedCounter> {
    const windows = [
      { keyPrefix, points: perSecond, duration: 1 },
      { keyPrefix: `${keyPrefix}-burst`, points: perSecond * BURST_SECONDS, duration: BURST_WINDOW_SECONDS },
    ];
    const [steady, burst] = windows.map(
      (window) =>
        new RateLimiterMongo({
          ...window,
          storeClient: database,
          tableName: COUNTERS_COLLECTION,
          disableIndexesCreation: true,
          // A key over its limit is refused from memory until its window ends, without a round trip.
          inMemoryBlockOnConsumed: window.points,
          // If the database fails, counting goes on in this process rather than failing the request.
          insuranceLimiter: new RateLimiterMemory(window),
        }),
    );
    // The shared counters' indexes: one document per key, and expired windows removed by MongoDB.
    await steady!.createIndexes();
    return new SharedCounter(new BurstyRateLimiter(steady!, burst!));
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
