import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { AccountStore } from '../accounts/account.store.js';
import { pointsToUnits } from '../accounts/points.js';
import type { Logger } from '../logger.js';
import type { DeclineReason } from './purchase.model.js';
import type { PurchaseStore, PurchaseTerms } from './purchase.store.js';
import { SsoUnavailableError, type PaymentState, type SsoClient } from './sso-client.js';

/** A pay call starts at most this long after its purchase is recorded; a later one is not sent at all. */
export const PAY_START_SLACK_MS = 3_000;
/** Allowance for a request still on its way to the provider, and for instances' clocks that differ a little. */
const CLOCK_SLACK_MS = 2_000;
/** How long a balance read or a buy waits for the settlement of the caller's unfinished purchases. */
const SETTLE_WAIT_MS = 1_000;
const SWEEP_BATCH = 100;
const SWEEP_CONCURRENCY = 8;

export interface SettlementSweep {
  /** Stops the timer, then waits for the pass under way and every settlement still running. */
  stop(): Promise<void>;
}

/**
 * Brings purchases left `pending` (a timeout, a lost answer, a crash between charge and credit)
 * to their final state by asking the provider what became of their order.
 *
 * Why every purchase ends credited exactly once, or declined with nothing charged:
 * - The purchase is recorded, and its order added to the user's `pendingOrders`, before the
 *   provider is asked to charge it; the provider charges an order id at most once.
 * - Crediting is one single-document update of the user that adds the points and removes the
 *   order from `pendingOrders`, matching only while the order is there: whoever credits second
 *   (another request, another instance, a settlement after a crash) changes nothing.
 * - An order is dropped without credit only on a final answer: "too low"/`unpaid` (the provider
 *   repeats its first answer for an order, so it will never be charged), or `unknown` once its
 *   `payDeadline` has passed, after which no pay call of ours for it can still arrive.
 * - The purchase's own state is written after the user's balance, so a crash in between only
 *   leaves a pending purchase whose settlement finds the order already gone and just records it.
 * Leases (claimed by one atomic update) keep instances from asking about the same order at once;
 * they save work, while the guarantees above hold even when a lease runs out mid-way.
 */
export class PurchaseSettlement {
  /** From recording a purchase to its `payDeadline`. */
  readonly payWindowMs: number;
  private readonly leaseMs: number;
  private readonly instance = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private leasesTaken = 0;
  /** Settlements running in this process, by order id: a second request for one joins the first. */
  private readonly running = new Map<string, Promise<boolean>>();

  constructor(
    private readonly accounts: AccountStore,
    private readonly purchases: PurchaseStore,
    private readonly sso: SsoClient,
    private readonly logger: Logger,
  ) {
    this.payWindowMs = PAY_START_SLACK_MS + sso.callWindowMs + CLOCK_SLACK_MS;
    this.leaseMs = sso.callWindowMs + CLOCK_SLACK_MS;
  }

  /** A name for one piece of work on one purchase, unique across instances. */
  newLeaseOwner(): string {
    this.leasesTaken += 1;
    return `${this.instance}#${this.leasesTaken}`;
  }

  /** Credits a paid purchase (at most once) and records it; the new balance, or null when it was credited before. */
  async credit(terms: PurchaseTerms): Promise<number | null> {
    const balance = await this.accounts.creditOrder(terms.userId, terms.orderId, pointsToUnits(terms.quota));
    await this.purchases.finish(terms.orderId, { state: 'credited' });
    return balance;
  }

  /** Drops a purchase that was not and will never be charged. */
  async decline(terms: PurchaseTerms, reason: DeclineReason): Promise<void> {
    await this.accounts.dropOrder(terms.userId, terms.orderId);
    await this.purchases.finish(terms.orderId, { state: 'declined', reason });
  }

  /**
   * Settles a user's unfinished orders, waiting for them at most SETTLE_WAIT_MS (a slow provider
   * must not hold up a balance read; the work goes on in the background). True when any order
   * reached its final state in that time.
   */
  async settleSoon(orderIds: readonly string[]): Promise<boolean> {
    const work = Promise.all(orderIds.map((orderId) => this.settle(orderId))).then((done) => done.some(Boolean));
    let timer: NodeJS.Timeout | undefined;
    const giveUp = new Promise<boolean>((resolve) => {
      timer = setTimeout(resolve, SETTLE_WAIT_MS, false);
    });
    try {
      return await Promise.race([work, giveUp]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Settles one order unless it is finished or leased to someone else; never throws. True when it is now final. */
  settle(orderId: string): Promise<boolean> {
    const running = this.running.get(orderId);
    if (running) return running;
    const work = this.settleUnderLease(orderId)
      .catch((error: unknown) => {
        this.logger.warn({ err: error, orderId }, 'settling a purchase failed; it will be tried again');
        return false;
      })
      .finally(() => this.running.delete(orderId));
    this.running.set(orderId, work);
    return work;
  }

  private async settleUnderLease(orderId: string): Promise<boolean> {
    const now = Date.now();
    const owner = this.newLeaseOwner();
    const terms = await this.purchases.claim(orderId, owner, new Date(now), new Date(now + this.leaseMs));
    if (terms === null) return false;
    let state: PaymentState;
    try {
      state = await this.sso.paymentState(orderId);
    } catch (error) {
      await this.purchases.release(orderId, owner);
      if (error instanceof SsoUnavailableError) return false;
      throw error;
    }
    if (state === 'paid') {
      await this.credit(terms);
    } else if (state === 'unpaid') {
      await this.decline(terms, 'unpaid');
    } else if (Date.now() > terms.payDeadline.getTime()) {
      // Never seen by the provider, and no call of ours can reach it any more.
      await this.decline(terms, 'never-charged');
    } else {
      // A pay call may still be on its way: ask again later.
      await this.purchases.release(orderId, owner);
      return false;
    }
    this.logger.info({ orderId, userId: terms.userId, state }, 'unfinished purchase settled');
    return true;
  }

  /** One pass over pending purchases nobody holds a lease on; the number brought to a final state. */
  async sweepOnce(): Promise<number> {
    const orderIds = await this.purchases.unleased(new Date(), SWEEP_BATCH);
    let settled = 0;
    for (let start = 0; start < orderIds.length; start += SWEEP_CONCURRENCY) {
      const done = await Promise.all(orderIds.slice(start, start + SWEEP_CONCURRENCY).map((orderId) => this.settle(orderId)));
      settled += done.filter(Boolean).length;
    }
    return settled;
  }

  /** Sweeps every `intervalMs`, one pass at a time, until stopped. */
  startSweep(intervalMs: number): SettlementSweep {
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    let pass: Promise<void> = Promise.resolve();
    const schedule = (): void => {
      timer = setTimeout(run, intervalMs);
      timer.unref();
    };
    const run = (): void => {
      pass = this.sweepOnce()
        .then(
          () => undefined,
          (error: unknown) => this.logger.error({ err: error }, 'settlement sweep failed'),
        )
        .finally(() => {
          if (!stopped) schedule();
        });
    };
    schedule();
    return {
      stop: async () => {
        stopped = true;
        clearTimeout(timer);
        await pass;
        while (this.running.size > 0) await Promise.allSettled([...this.running.values()]);
      },
    };
  }
}
