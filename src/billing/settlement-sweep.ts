import { AsyncResource } from 'node:async_hooks';

import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import type { PurchaseLifecycle } from './purchase-lifecycle.js';

/** The shortest pause between two passes, so that a purchase that stays due cannot make the sweep spin. */
const MIN_PAUSE_MS = 100;

export interface SettlementSweep {
  /** Stops the timer, then waits for the pass under way and every piece of work on purchases still running. */
  stop(): Promise<void>;
}

/**
 * A timer that settles unfinished purchases: a pass at start, then after each pass a sleep until
 * the next purchase is due, never longer than `intervalMs` (other instances add purchases too), and
 * cut short when a purchase of this instance becomes due sooner.
 */
export function startSettlementSweep(purchases: PurchaseLifecycle, clock: Clock, intervalMs: number, logger: Logger): SettlementSweep {
  let stopped = false;
  let cancelTimer: (() => void) | undefined;
  let wakeAt = Number.POSITIVE_INFINITY;
  let pass: Promise<void> | undefined;

  const sleepUntil = (at: number): void => {
    cancelTimer?.();
    wakeAt = at;
    cancelTimer = clock.schedule(run, Math.max(0, at - clock.now()));
  };

  // A pass runs in the context the sweep started in, never in that of what woke it (a buy whose
  // provider did not answer): its work is no part of that request, nor of its trace.
  const run = AsyncResource.bind((): Promise<void> => {
    cancelTimer = undefined;
    wakeAt = Number.POSITIVE_INFINITY;
    pass = (async () => {
      let next = clock.now() + intervalMs;
      try {
        await purchases.sweepOnce();
        const due = await purchases.nextDue();
        if (due !== undefined) next = Math.min(next, Math.max(due, clock.now() + MIN_PAUSE_MS));
      } catch (error) {
        logger.error({ err: error }, 'settlement sweep failed; it runs again at the next interval');
      }
      // A purchase that became due during the pass may want it sooner.
      if (!stopped) sleepUntil(Math.min(next, wakeAt));
    })().finally(() => {
      pass = undefined;
    });
    return pass;
  });

  purchases.onDue((at) => {
    if (stopped) return;
    if (pass !== undefined) wakeAt = Math.min(wakeAt, at);
    else if (at < wakeAt) sleepUntil(at);
  });
  sleepUntil(clock.now());

  return {
    async stop() {
      stopped = true;
      cancelTimer?.();
      await pass;
      await purchases.idle();
    },
  };
}
