import { randomBytes, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';

import type { AccountStore } from '../accounts/account.store.js';
import { pointsToMicros } from '../accounts/points.js';
import { type Clock, pause, within } from '../clock.js';
import type { Logger } from '../logger.js';
import { NO_TRACING, type PurchaseTracing } from '../observability/tracing.js';
import { type DeclineReason, type PurchaseRecord, type PurchaseState, UNFINISHED_STATES } from './purchase.model.js';
import type { PurchaseClose, PurchaseStore, PurchaseTerms } from './purchase.store.js';
import type { PurchaseMetrics } from './purchase-metrics.js';
import { type PaymentState, type SsoClient, SsoUnavailableError } from './sso-client.js';

/** 1 unit of money buys 10 points. */
const POINTS_PER_MONEY_UNIT = 10;
/** The pause after the first check that leaves an order's fate open; each further one doubles it. */
const FIRST_RECHECK_MS = 500;
/** Beyond a provider call's own window, before a lease runs out: database writes, a busy process, clocks that differ a little. */
const LEASE_SLACK_MS = 5_000;
/** How long a balance read or a buy waits for the settlement of the caller's unfinished purchases. */
const SETTLE_WAIT_MS = 1_000;
const SWEEP_BATCH = 100;
const SWEEP_CONCURRENCY = 8;
/** How long an idempotency key stands for its purchase, from the moment the purchase was opened. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;
/** Pauses between looks at a purchase that another buy or check is working on: the first, and the longest. */
const FIRST_LOOK_MS = 20;
const LONGEST_LOOK_MS = 250;
/** Purchases a buy may open for one key, should racing buys let the key go under it again and again. */
const KEY_ATTEMPTS = 3;

export interface SettlementSettings {
  /** Past this age an unfinished purchase is marked for review; it is still checked and settled. */
  horizonMs: number;
  /** The longest pause between two checks of one unfinished purchase. */
  backoffMaxMs: number;
}

/** Who buys how many points; a key makes the buy safe to retry (see `PurchaseLifecycle.buy`). */
export interface Buyer {
  userId: number;
  username: string;
  quota: number;
  idempotencyKey?: string | undefined;
}

/** How a buy ended, as far as the buyer is concerned. */
export type BuyResult =
  | { outcome: 'credited'; balanceMicros: number }
  | { outcome: 'insufficient-funds' }
  /** The provider's answer did not come: the purchase stays pending, and is credited if it was charged. */
  | { outcome: 'not-confirmed' }
  | { outcome: 'no-account' }
  /** Held up before the order was sent, and closed meanwhile: nothing was or will be charged. */
  | { outcome: 'not-sent' }
  /** The key stands for a purchase of another quota: nothing was bought. */
  | { outcome: 'key-reused' }
  /** The key's purchase was closed by an operator, the provider having never received its order: nothing was charged. */
  | { outcome: 'not-made' };

/** What an operator's recheck found: the provider's answer and the purchase's state before and after. */
export interface Recheck {
  answer: PaymentState;
  before: PurchaseState;
  after: PurchaseState;
}

/**
 * The whole life of a purchase: recorded, paid, settled, credited, closed.
 *
 *   opened ──order put on the user's pendingOrders──▶ pending ──provider: paid──▶ crediting ──▶ credited
 *     │                                                 │  ↺ provider: unknown, or unreachable: asked again
 *     │ its buy never sent the order                    │    0.5 s, 1 s, 2 s, … up to the backoff maximum,
 *     │ (it crashed, or was held up past its lease)     │    for as long as it takes; past the horizon it is
 *     ▼                                                 │    also marked for review
 *   declined (never-sent)                               ▼
 *                          declined (insufficient-funds: the pay answer; unpaid: the status answer;
 *                                    closed-by-operator: the provider confirmed it never got the order)
 *                                                       │ provider: paid after all (it changed its mind)
 *                                                       ▼
 *                                                credited (late)
 *
 * Why the points of a charged order are credited exactly once, and nothing is credited for an
 * order that was not charged, with single-document updates only:
 * - The provider charges an order id at most once. The order is sent only by the buy that moved
 *   its purchase from `opened` to `pending`, after the order was put on the user's `pendingOrders`.
 *   That move is conditional on the buy still holding the purchase, so a sweep closing an abandoned
 *   `opened` purchase and a late buy cannot both win: an order that was never sent is never charged.
 * - A pending purchase leaves `pending` once, by one conditional update: to `crediting` on the
 *   provider's `paid`, to `declined` on its "too low" or `unpaid`. `unknown` and an unreachable
 *   provider never close it, whatever the time: it is asked about again, by any instance, after any
 *   restart, because its schedule is in the database.
 * - From `crediting`, the points are added by one update of the user that also removes the order
 *   from `pendingOrders`, matching only while it is there: repeated (after a crash, by another
 *   instance), it changes nothing. Only that update removes the order while the purchase is
 *   unfinished (a decline removes it after the purchase is `declined`, and no final state comes
 *   back), so for a purchase in `crediting`, "not on the list" means "credited already".
 * - A declined purchase never went through `crediting`, so its points were never added; when the
 *   provider says it is paid after all, it is credited under a guard of its own (`lateCredits`
 *   on the user), once.
 * - The user is written after `crediting` and before `credited`, so a crash in between leaves a
 *   purchase that the next pass completes, without asking the provider again.
 * Leases (`nextCheckAt` pushed past the end of the work by one atomic claim) keep instances from
 * working on the same purchase at once; they save calls, and the guarantees above do not rely on them.
 *
 * Why one intent to buy (a caller's idempotency key, within IDEMPOTENCY_WINDOW_MS) sends at most
 * one order that can be charged, however often it is retried, on whichever instances:
 * - The key is claimed by the insert that opens its purchase: a unique index on `(userId,
 *   idempotencyKey)` lets exactly one of the buys racing with it open one. The others open
 *   nothing and answer that purchase's outcome, by its state (`answerOf`).
 * - A purchase lets its key go (one update) only when no order of it can ever be charged, since
 *   it was never sent (`declined`, `never-sent`: final, as above), or once it is past the window.
 *   Only then may a retry open a purchase of its own, which is bound by all of the above.
 */
export class PurchaseLifecycle {
  private readonly leaseMs: number;
  private readonly instance = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private leasesTaken = 0;
  /** Work on purchases in this process, by order id: a second request for one joins the first. */
  private readonly running = new Map<string, Promise<PurchaseState | undefined>>();
  /** Told when a purchase becomes due earlier than it was, so that the sweep can wake for it. */
  private dueListener: ((at: number) => void) | undefined;

  constructor(
    private readonly accounts: AccountStore,
    private readonly store: PurchaseStore,
    private readonly sso: SsoClient,
    private readonly settings: SettlementSettings,
    private readonly clock: Clock,
    private readonly metrics: PurchaseMetrics,
    private readonly logger: Logger,
    private readonly tracing: PurchaseTracing = NO_TRACING.purchases,
  ) {
    this.leaseMs = sso.callWindowMs + LEASE_SLACK_MS;
  }

  /**
   * Records a purchase, asks the provider to charge it, and credits it when paid. A buy whose
   * idempotency key already stands for a purchase opens none: it answers that purchase's outcome,
   * or refuses when that purchase is of another quota.
   */
  async buy(buyer: Buyer): Promise<BuyResult> {
    for (let attempt = 1; attempt <= KEY_ATTEMPTS; attempt += 1) {
      const orderId = randomUUID();
      // Stored with the purchase when the buy is traced, so that its settlement, wherever and whenever, links back to it.
      const traceparent = this.tracing.opening(orderId);
      const terms: PurchaseTerms = {
        orderId,
        ...buyer,
        amount: buyer.quota / POINTS_PER_MONEY_UNIT,
        ...(traceparent === undefined ? {} : { traceparent }),
      };
      const owner = this.newLeaseOwner();
      if (await this.beforeSending(terms, () => this.store.open(terms, owner, this.at(0), this.at(this.leaseMs)))) {
        return this.charge(terms, owner);
      }
      // Only a key held by another purchase keeps one from being opened.
      const earlier = await this.answerForKey(buyer.userId, buyer.idempotencyKey!, buyer.quota);
      if (earlier !== undefined) return earlier;
    }
    // Each purchase met let the key go meanwhile, never having sent its order: nothing was charged.
    return { outcome: 'not-sent' };
  }

  /** Sends the order of a purchase just opened and settles it by the provider's answer. */
  private async charge(terms: PurchaseTerms, owner: string): Promise<BuyResult> {
    const stopped = await this.beforeSending(terms, () => this.readyToSend(terms, owner));
    if (stopped !== undefined) return stopped;
    let paid: boolean;
    try {
      paid = (await this.sso.pay({ user: terms.username, order: terms.orderId, amount: terms.amount })) === 'paid';
    } catch (error) {
      if (!(error instanceof SsoUnavailableError)) throw error;
      // It may be charged all the same, now or much later: the first check is due at once.
      if (await this.store.postpone(terms.orderId, owner, { nextCheckAt: this.at(0), lastCheck: error.message, counted: false })) {
        this.dueListener?.(this.clock.now());
      }
      return { outcome: 'not-confirmed' };
    }
    return this.settleAnswered(terms, paid);
  }

  /** Puts the order on its buyer's list and the purchase in `pending`; the outcome when it must not be sent. */
  private async readyToSend(terms: PurchaseTerms, owner: string): Promise<BuyResult | undefined> {
    if (!(await this.accounts.addPendingOrder(terms.userId, terms.orderId))) {
      await this.close(terms, ['opened'], { state: 'declined', reason: 'never-sent' });
      return { outcome: 'no-account' };
    }
    if (!(await this.store.markPending(terms.orderId, owner, this.at(this.leaseMs)))) {
      // A sweep closed it meanwhile, perhaps before the order was on the list: it is final, so removing it is safe.
      await this.accounts.dropOrder(terms.userId, terms.orderId);
      return { outcome: 'not-sent' };
    }
    return undefined;
  }

  /**
   * A buy whose write fails before its order is sent (an election, a write whose outcome it cannot
   * know, such as a write concern error) never sends it: the purchase, if it was recorded at all,
   * is closed as never sent, from `opened` or from the `pending` only this buy could have moved it
   * to, so that its key is free at once; then the failure goes on. If the database refuses that
   * too, the sweep closes an `opened` one once its lease is over.
   */
  private async beforeSending<T>(terms: PurchaseTerms, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      await this.decline(terms, ['opened', 'pending'], 'never-sent').catch((failure: unknown) => {
        this.logger.warn({ err: failure, orderId: terms.orderId }, 'a purchase whose order was never sent could not be closed yet');
      });
      throw error;
    }
  }

  /**
   * The provider answered: its answer is the buyer's, whatever the database does next. When it
   * fails to take the answer in (an election, a write whose outcome is unknown), the purchase is
   * settled later, from the state the database holds, and the buyer is told so; never told to try
   * again, which would buy twice.
   */
  private async settleAnswered(terms: PurchaseTerms, paid: boolean): Promise<BuyResult> {
    try {
      if (!paid) {
        await this.decline(terms, ['pending'], 'insufficient-funds');
        return { outcome: 'insufficient-funds' };
      }
      const balanceMicros = (await this.creditPaid(terms)) ?? (await this.accounts.balance(terms.userId)).micros;
      return { outcome: 'credited', balanceMicros };
    } catch (error) {
      this.logger.warn(
        { err: error, orderId: terms.orderId, paid },
        'the provider answered, but the database failed to record it; the purchase is settled later',
      );
      this.dueListener?.(this.clock.now() + LEASE_SLACK_MS);
      return paid ? { outcome: 'not-confirmed' } : { outcome: 'insufficient-funds' };
    }
  }

  /**
   * What a buy answers when its key stands for another purchase: that purchase's outcome, once
   * its fate is known or nobody is working on it any more; undefined when the key was let go,
   * because its purchase is past the window or was never sent (so a retry may buy after all).
   */
  private async answerForKey(userId: number, idempotencyKey: string, quota: number): Promise<BuyResult | undefined> {
    const holder = await this.store.findByKey(userId, idempotencyKey);
    if (holder === null) return undefined;
    if (holder.openedAt.getTime() <= this.clock.now() - IDEMPOTENCY_WINDOW_MS) {
      await this.store.releaseKey(holder.orderId);
      return undefined;
    }
    if (holder.quota !== quota) return { outcome: 'key-reused' };
    const purchase = await this.awaitOutcome(holder);
    if (purchase.declineReason === 'never-sent') {
      await this.store.releaseKey(purchase.orderId);
      return undefined;
    }
    return this.answerOf(purchase);
  }

  /**
   * A purchase as it is once its fate is known, or once nobody holds it (pending, its fate open
   * until the provider says), or after at most a lease's length. While its buy or a check holds
   * it, on any instance, it is looked at again after a short pause; once that lease is over (its
   * holder died, or its next check is due), it is worked on here, as the sweep would.
   */
  private async awaitOutcome(purchase: PurchaseRecord): Promise<PurchaseRecord> {
    // One clock decides it all: the wait, its pauses, and whether the holder's lease is over.
    const giveUpAt = this.clock.now() + this.leaseMs;
    let current = purchase;
    for (let look = FIRST_LOOK_MS; isUnfinished(current) && this.clock.now() < giveUpAt; look = Math.min(2 * look, LONGEST_LOOK_MS)) {
      if (current.nextCheckAt !== undefined && current.nextCheckAt.getTime() <= this.clock.now()) await this.settle(current.orderId);
      else if (current.state === 'pending' && current.leaseOwner === undefined) break;
      else await pause(this.clock, Math.min(look, giveUpAt - this.clock.now()));
      current = (await this.store.find(current.orderId)) ?? current;
    }
    return current;
  }

  /**
   * The answer a retry gets from the purchase its key stands for, by its state now: as its own buy
   * answered, or, when the purchase was settled since, as its buy would have answered had the
   * provider's answer come in time. A credited one answers the balance now, which holds its points.
   */
  private async answerOf(purchase: PurchaseRecord): Promise<BuyResult> {
    if (purchase.state === 'credited') return { outcome: 'credited', balanceMicros: (await this.accounts.balance(purchase.userId)).micros };
    if (purchase.state !== 'declined') return { outcome: 'not-confirmed' };
    // The provider refuses an order it received only for want of money; an operator closes one it never received.
    return purchase.declineReason === 'closed-by-operator' ? { outcome: 'not-made' } : { outcome: 'insufficient-funds' };
  }

  /**
   * Settles those of a user's orders that are due, waiting at most SETTLE_WAIT_MS (a slow provider
   * must not hold up a balance read; the work goes on). True when any was credited in that time.
   */
  async settleOrdersOf(orderIds: readonly string[]): Promise<boolean> {
    const now = this.clock.now();
    const work = (await this.store.findMany(orderIds)).map(async (purchase) => {
      if (purchase.state === 'credited' || purchase.state === 'declined') {
        // Closed, but a crash kept it on the list: it is final, so removing it is safe.
        await this.accounts.dropOrder(purchase.userId, purchase.orderId).catch(() => undefined);
        return false;
      }
      // Work on it under way in this process is joined; elsewhere, it is left to its holder.
      const due = purchase.nextCheckAt !== undefined && purchase.nextCheckAt.getTime() <= now;
      return (due || this.running.has(purchase.orderId)) && (await this.settle(purchase.orderId)) === 'credited';
    });
    return within(
      this.clock,
      SETTLE_WAIT_MS,
      Promise.all(work).then((credited) => credited.some(Boolean)),
      false,
    );
  }

  /**
   * Works on one unfinished purchase if it is due and nobody else holds it: asks the provider once
   * and moves it accordingly. Never throws; its state afterwards, or undefined when it was not taken.
   */
  settle(orderId: string): Promise<PurchaseState | undefined> {
    return this.exclusively(orderId, () =>
      this.tracing.settling(orderId, async (openedIn) => {
        const owner = this.newLeaseOwner();
        const purchase = await this.store.claimDue(orderId, owner, this.at(0), this.at(this.leaseMs));
        if (purchase === null) return undefined;
        openedIn(purchase.traceparent);
        return this.work(purchase, owner);
      }),
    );
  }

  /** One pass over the unfinished purchases that are due. */
  async sweepOnce(): Promise<void> {
    const orderIds = await this.store.due(this.at(0), SWEEP_BATCH);
    for (let start = 0; start < orderIds.length; start += SWEEP_CONCURRENCY) {
      await Promise.all(orderIds.slice(start, start + SWEEP_CONCURRENCY).map((orderId) => this.settle(orderId)));
    }
  }

  /** When the next unfinished purchase is due (ms since the epoch); undefined when there is none. */
  async nextDue(): Promise<number | undefined> {
    return (await this.store.nextDue())?.getTime();
  }

  /** Calls `listener` whenever a purchase becomes due sooner than the sweep may look. */
  onDue(listener: (at: number) => void): void {
    this.dueListener = listener;
  }

  /** Waits for every piece of work on purchases running in this process. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running.values()]);
  }

  /**
   * For operators: asks the provider about one order now, whatever its schedule or state, and
   * settles it accordingly: a pending one as any check would, a declined one found paid is credited.
   * Null when there is no such purchase; throws `SsoUnavailableError` when the provider did not answer.
   */
  async recheck(orderId: string): Promise<Recheck | null> {
    const found = await this.store.find(orderId);
    if (found === null) return null;
    const owner = this.newLeaseOwner();
    const purchase = found.state === 'pending' ? ((await this.store.claimPending(orderId, owner, this.at(this.leaseMs))) ?? found) : found;
    let answer: PaymentState;
    try {
      answer = await this.sso.paymentState(orderId);
    } catch (error) {
      if (error instanceof SsoUnavailableError && purchase.state === 'pending') await this.postpone(purchase, owner, error.message);
      throw error;
    }
    // Only `paid` can change a purchase that is not pending: money taken is always points given.
    if (purchase.state === 'pending' || answer === 'paid') await this.apply(purchase, owner, answer);
    return { answer, before: found.state, after: (await this.store.find(orderId))?.state ?? found.state };
  }

  /**
   * For operators, once the provider has confirmed by other means that it never received an order:
   * asks it once and settles the purchase as a recheck does; while the answer is still `unknown`,
   * closes it as declined (`closed-by-operator`), so that it leaves the review queue. Should the
   * provider charge the order after all, a later recheck credits it: money taken is always points given.
   */
  async closeUnknown(orderId: string): Promise<Recheck | null> {
    const checked = await this.recheck(orderId);
    if (checked === null || checked.answer !== 'unknown' || checked.after !== 'pending') return checked;
    const owner = this.newLeaseOwner();
    const purchase = await this.store.claimPending(orderId, owner, this.at(this.leaseMs));
    if (purchase !== null) {
      await this.decline(purchase, ['pending'], 'closed-by-operator');
      this.logger.warn({ orderId, userId: purchase.userId, amount: purchase.amount }, 'an unsettled purchase was closed by an operator');
    }
    return { ...checked, after: (await this.store.find(orderId))?.state ?? checked.after };
  }

  private exclusively(orderId: string, task: () => Promise<PurchaseState | undefined>): Promise<PurchaseState | undefined> {
    const running = this.running.get(orderId);
    if (running) return running;
    const work = task()
      .catch((error: unknown) => {
        this.logger.warn({ err: error, orderId }, 'settling a purchase failed; it will be tried again');
        return undefined;
      })
      .finally(() => this.running.delete(orderId));
    this.running.set(orderId, work);
    return work;
  }

  /** One step for a purchase this process holds: close it if its buy never sent it, finish its credit, or ask the provider. */
  private async work(purchase: PurchaseRecord, owner: string): Promise<PurchaseState> {
    if (purchase.state === 'opened') {
      // Its buy stopped before the order was sent: the provider never heard of it, and never will.
      await this.decline(purchase, ['opened'], 'never-sent');
      return 'declined';
    }
    if (purchase.state === 'crediting') {
      // Found paid, then cut off (a crash) before it was closed: only the crediting remains to be done.
      await this.finishCrediting(purchase);
      return 'credited';
    }
    let answer: PaymentState;
    try {
      answer = await this.sso.paymentState(purchase.orderId);
    } catch (error) {
      if (!(error instanceof SsoUnavailableError)) throw error;
      await this.postpone(purchase, owner, error.message);
      return 'pending';
    }
    return this.apply(purchase, owner, answer);
  }

  /** Moves a purchase by the provider's answer about its order (only a pending one, unless the answer is `paid`). */
  private async apply(purchase: PurchaseRecord, owner: string, answer: PaymentState): Promise<PurchaseState> {
    if (answer === 'unknown') {
      await this.postpone(purchase, owner, 'the provider answered unknown');
      return 'pending';
    }
    if (answer === 'paid') await this.creditPaid(purchase);
    else await this.decline(purchase, ['pending'], 'unpaid');
    if (purchase.state === 'pending') {
      this.logger.info(
        { orderId: purchase.orderId, userId: purchase.userId, answer, checks: purchase.checks },
        'unfinished purchase settled',
      );
    }
    return answer === 'paid' ? 'credited' : 'declined';
  }

  /**
   * Credits an order the provider says is paid, whatever became of its purchase meanwhile: the new
   * balance, or null when this call did not add the points (they were added by another, or late).
   */
  private async creditPaid(terms: PurchaseTerms): Promise<number | null> {
    if (await this.store.startCrediting(terms.orderId, this.at(LEASE_SLACK_MS))) return this.finishCrediting(terms);
    const purchase = await this.store.find(terms.orderId);
    if (purchase?.state === 'crediting') await this.finishCrediting(purchase);
    else if (purchase?.state === 'declined') await this.creditLate(purchase);
    return null;
  }

  /**
   * Adds the points of a purchase in `crediting` (at most once) and closes it; null when they were
   * added before. Once the points are in, a close that fails leaves the purchase in `crediting`,
   * due again shortly: the next pass closes it without adding them again.
   */
  private async finishCrediting(terms: PurchaseTerms): Promise<number | null> {
    const balance = await this.accounts.creditOrder(terms.userId, terms.orderId, pointsToMicros(terms.quota));
    await this.close(terms, ['crediting'], { state: 'credited', late: false }).catch((error: unknown) => {
      this.logger.warn({ err: error, orderId: terms.orderId }, 'a credited purchase could not be closed yet; it is closed later');
      this.dueListener?.(this.clock.now() + LEASE_SLACK_MS);
    });
    return balance;
  }

  /** Closes an unfinished purchase without points, then takes its order off the user's list. */
  private async decline(terms: PurchaseTerms, from: readonly ('opened' | 'pending')[], reason: DeclineReason): Promise<void> {
    if (await this.close(terms, from, { state: 'declined', reason })) await this.accounts.dropOrder(terms.userId, terms.orderId);
  }

  private async creditLate(purchase: PurchaseRecord): Promise<void> {
    await this.accounts.creditLateOrder(purchase.userId, purchase.orderId, pointsToMicros(purchase.quota));
    if (await this.close(purchase, ['declined'], { state: 'credited', late: true })) {
      this.logger.warn(
        { orderId: purchase.orderId, userId: purchase.userId, declineReason: purchase.declineReason },
        'a declined purchase was found paid after all: credited',
      );
    }
  }

  /** True for the one call that closed it. */
  private async close(terms: PurchaseTerms, from: readonly PurchaseState[], outcome: PurchaseClose): Promise<boolean> {
    const closed = await this.store.close(terms.orderId, from, outcome, this.at(0));
    if (closed) this.metrics.closed(outcome);
    return closed;
  }

  /** Gives a pending purchase back with its next check due later, marking it for review past the horizon. */
  private async postpone(purchase: PurchaseRecord, owner: string, lastCheck: string): Promise<void> {
    const now = this.clock.now();
    const checks = purchase.checks + 1;
    const pause = Math.min(FIRST_RECHECK_MS * 2 ** (checks - 1), this.settings.backoffMaxMs);
    const needsReview = purchase.reviewSince === undefined && now - purchase.openedAt.getTime() >= this.settings.horizonMs;
    const postponed = await this.store.postpone(purchase.orderId, owner, {
      nextCheckAt: new Date(now + pause),
      lastCheck,
      counted: true,
      ...(needsReview ? { reviewSince: new Date(now) } : {}),
    });
    // Someone else took it up meanwhile (this work outlasted its lease): what they find is what counts.
    if (!postponed) return;
    if (needsReview) {
      this.logger.error(
        { orderId: purchase.orderId, userId: purchase.userId, amount: purchase.amount, openedAt: purchase.openedAt, checks, lastCheck },
        'a purchase is still unsettled past the settlement horizon and needs review; it is still checked, and credited if found paid',
      );
    }
    this.dueListener?.(now + pause);
  }

  /** A name for one piece of work on one purchase, unique across instances. */
  private newLeaseOwner(): string {
    this.leasesTaken += 1;
    return `${this.instance}#${this.leasesTaken}`;
  }

  /** The clock's time `delayMs` from now. */
  private at(delayMs: number): Date {
    return new Date(this.clock.now() + delayMs);
  }
}

function isUnfinished(purchase: PurchaseRecord): boolean {
  return (UNFINISHED_STATES as readonly PurchaseState[]).includes(purchase.state);
}
