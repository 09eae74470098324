/**
 * Time as the purchases module and its sweep see it. Production uses the system's; tests pass one
 * they move by hand, so that hours of re-checks run in milliseconds and nothing waits on a sleep.
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

export const systemClock: Clock = {
  now: () => Date.now(),
  schedule(callback, delayMs) {
    // Never keeps the process alive on its own: stopping is the owner's decision.
    const timer = setTimeout(callback, delayMs).unref();
    return () => clearTimeout(timer);
  },
};
