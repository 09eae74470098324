/**
 * Time where it decides something: purchases and their sweep (a buy waiting for the purchase its
 * key stands for, a balance read waiting for its settlement), a credential's expiry ending a
 * WebSocket, and the rate limits' windows. Production uses the system's; tests pass one they move by hand, so that hours of
 * re-checks run in milliseconds and nothing waits on a sleep.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /**
   * Calls `callback` once, `delayMs` from now; answers a function that cancels it. The callback's
   * promise, when it returns one, is what a hand-moved clock waits for before going on.
   */
  schedule(callback: () => unknown, delayMs: number): () => void;
}

/** setTimeout's longest delay (about 24.8 days); a longer wait is made of several. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export const systemClock: Clock = {
  now: () => Date.now(),
  schedule(callback, delayMs) {
    const due = Date.now() + delayMs;
    let timer: NodeJS.Timeout;
    const arm = () => {
      const left = due - Date.now();
      // Never keeps the process alive on its own: stopping is the owner's decision.
      timer = setTimeout(left > MAX_TIMER_MS ? arm : callback, Math.max(0, Math.min(left, MAX_TIMER_MS))).unref();
    };
    arm();
    return () => clearTimeout(timer);
  },
};

/** Resolves `delayMs` from now on `clock`: a pause that a hand-moved clock ends when it is moved past it. */
export function pause(clock: Clock, delayMs: number): Promise<void> {
  return new Promise((resolve) => {
    clock.schedule(resolve, delayMs);
  });
}

/**
 * `work`'s result, or `fallback` once `delayMs` has passed on `clock` without it; the timer is
 * cancelled as soon as either comes. The work goes on either way.
 */
export async function within<T>(clock: Clock, delayMs: number, work: Promise<T>, fallback: T): Promise<T> {
  let cancel: (() => void) | undefined;
  const giveUp = new Promise<T>((resolve) => {
    cancel = clock.schedule(() => resolve(fallback), delayMs);
  });
  try {
    return await Promise.race([work, giveUp]);
  } finally {
    cancel?.();
  }
}
