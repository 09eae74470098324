import type { Clock } from '../../src/clock.js';

interface Timer {
  at: number;
  order: number;
  callback: () => unknown;
}

/**
 * A clock that moves only when told. `advance` runs every timer that falls due, in time order,
 * and waits for the work each one starts (its promise) before the next, so a test that moves an
 * hour ahead knows that everything that hour held has happened.
 */
export class ManualClock implements Clock {
  private current: number;
  private timers: Timer[] = [];
  private scheduled = 0;

  constructor(start = Date.now()) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  schedule(callback: () => unknown, delayMs: number): () => void {
    const timer = { at: this.current + Math.max(0, delayMs), order: this.scheduled++, callback };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((other) => other !== timer);
    };
  }

  /** How many timers fall due within `ms` from now: what is waiting on the clock right now. */
  dueWithin(ms: number): number {
    return this.timers.filter((timer) => timer.at <= this.current + ms).length;
  }

  /**
   * `work`'s result, the clock following real time meanwhile (moved every few milliseconds by the
   * time that passed): for work that waits on the clock without being about time, such as racing
   * buys that look at each other's purchase until it is settled.
   */
  async followingRealTime<T>(work: () => Promise<T>): Promise<T> {
    let last = performance.now();
    let moving: Promise<void> = Promise.resolve();
    const ticker = setInterval(() => {
      moving = moving.then(() => {
        const now = performance.now();
        const elapsed = now - last;
        last = now;
        return this.advance(elapsed);
      });
    }, 5);
    try {
      return await work();
    } finally {
      clearInterval(ticker);
      await moving;
    }
  }

  async advance(ms: number): Promise<void> {
    if (!(ms >= 0)) throw new RangeError(`a clock moves forward only, not by ${ms} ms`);
    const target = this.current + ms;
    for (let fired = 0; ; fired += 1) {
      const due = this.timers.filter((timer) => timer.at <= target).sort((a, b) => a.at - b.at || a.order - b.order)[0];
      if (due === undefined) break;
      if (fired === 100_000) throw new Error('timers keep falling due: something reschedules itself without pause');
      this.timers = this.timers.filter((timer) => timer !== due);
      this.current = Math.max(this.current, due.at);
      await due.callback();
    }
    this.current = target;
  }
}
