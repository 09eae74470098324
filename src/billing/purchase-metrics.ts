import { Counter, Gauge, type Metric } from 'prom-client';

import type { Clock } from '../clock.js';
import { UNFINISHED_STATES } from './purchase.model.js';
import type { PurchaseClose, PurchaseStore, PurchaseSummary } from './purchase.store.js';

export interface PurchaseMetrics {
  /** Every purchase metric, for the gateway's registry. */
  readonly all: Metric[];
  /** Counts a purchase this process brought to its final state. */
  closed(outcome: PurchaseClose): void;
}

/**
 * Purchases by state: unfinished ones counted in the database at scrape time (the same figure on
 * every instance), closed ones counted by the instance that closed them. Plus the age of the oldest
 * unfinished purchase and how many need review, the figures an operator alerts on.
 */
export function purchaseMetrics(store: PurchaseStore, clock: Clock): PurchaseMetrics {
  // The gauges of one scrape share one read of the database.
  let reading: Promise<PurchaseSummary | undefined> | undefined;
  const summary = () => {
    reading ??= store
      .summary()
      .catch(() => undefined) // the database is down: mongodb_up says so, the other metrics still answer
      .finally(() => setImmediate(() => (reading = undefined)));
    return reading;
  };

  const unfinished = new Gauge({
    name: 'purchases_unfinished',
    help: 'Purchases not settled yet, by state: opened (being bought), pending (waiting for the provider), crediting (paid, being credited)',
    labelNames: ['state'] as const,
    registers: [],
    async collect() {
      const read = await summary();
      if (read === undefined) return;
      for (const state of UNFINISHED_STATES) this.set({ state }, read[state]);
    },
  });
  const oldestAge = new Gauge({
    name: 'purchases_oldest_unfinished_age_seconds',
    help: 'Age of the oldest purchase whose fate is still open; 0 when there is none',
    registers: [],
    async collect() {
      const read = await summary();
      if (read === undefined) return;
      this.set(read.oldestOpenedAt === undefined ? 0 : Math.max(0, clock.now() - read.oldestOpenedAt.getTime()) / 1000);
    },
  });
  const needingReview = new Gauge({
    name: 'purchases_needing_review',
    help: 'Purchases still unsettled past SETTLEMENT_HORIZON (each was logged at error); they are still checked',
    registers: [],
    async collect() {
      const read = await summary();
      if (read !== undefined) this.set(read.needingReview);
    },
  });
  const closed = new Counter({
    name: 'purchases_closed_total',
    help: 'Purchases this instance brought to their final state: credited, or declined with the reason',
    labelNames: ['state', 'reason'] as const,
    registers: [],
  });

  return {
    all: [unfinished, oldestAge, needingReview, closed],
    closed(outcome) {
      if (outcome.state === 'credited') closed.inc({ state: 'credited', reason: outcome.late ? 'paid-late' : 'paid' });
      else closed.inc({ state: 'declined', reason: outcome.reason });
    },
  };
}
