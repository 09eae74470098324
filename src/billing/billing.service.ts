import { randomUUID } from 'node:crypto';
import type { AccountStore } from '../accounts/account.store.js';
import { pointsToUnits, unitsToPoints } from '../accounts/points.js';
import { notAvailable } from '../errors.js';
import { userErrors, type Outcome } from '../shared/user-error.js';
import type { Gift } from './gift-grant.model.js';
import type { OfficialBilling } from './official-billing.js';
import type { PurchaseTerms } from './purchase.store.js';
import { PAY_START_SLACK_MS } from './settlement.js';
import { SsoUnavailableError, type PaymentOutcome } from './sso-client.js';

export const MIN_PURCHASE = 1;
export const MAX_PURCHASE = 99_999;
/** 1 unit of money buys 10 points. */
const POINTS_PER_MONEY_UNIT = 10;
/** Points each gift package grants, once per user, ever. */
const GIFT_POINTS: Record<Gift, number> = { cert: 50, teenager: 150 };

export type BuyOutcome = Outcome<{ quota: number }>;

export interface GiftPackage {
  cert: boolean;
  teenager: boolean;
}

/**
 * One caller's balance, purchases and gift package, built per request. Buying and the gift
 * package exist only on the official deployment (`official` given); elsewhere they answer
 * "not available" and call nothing.
 */
export class BillingService {
  constructor(
    private readonly accounts: AccountStore,
    private readonly userId: number,
    private readonly official?: OfficialBilling,
  ) {}

  /** One database read, plus the settlement of the caller's unfinished purchases when there are any. */
  async balance(): Promise<number> {
    const { units, pendingOrders } = await this.accounts.balance(this.userId);
    if (this.official === undefined || pendingOrders.length === 0) return unitsToPoints(units);
    const settled = await this.official.settlement.settleSoon(pendingOrders);
    return settled ? unitsToPoints((await this.accounts.balance(this.userId)).units) : unitsToPoints(units);
  }

  async buy(quota: number): Promise<BuyOutcome> {
    if (!Number.isInteger(quota) || quota < MIN_PURCHASE || quota > MAX_PURCHASE) {
      return { ok: false, error: userErrors.invalidQuota };
    }
    const official = this.official;
    if (official === undefined) return { ok: false, error: userErrors.notOnThisDeployment };
    const { settlement, purchases, sso } = official;

    const account = await this.accounts.billingAccount(this.userId);
    if (account === null) return { ok: false, error: userErrors.noAccount };
    if (account.pendingOrders.length > 0) await settlement.settleSoon(account.pendingOrders);

    // Why each purchase ends credited exactly once, or declined with nothing charged: see PurchaseSettlement.
    // 1. Record the purchase and mark its order as awaiting credit, before the provider hears of it.
    const recordedAt = Date.now();
    const terms: PurchaseTerms = {
      orderId: randomUUID(),
      userId: this.userId,
      username: account.username,
      quota,
      amount: quota / POINTS_PER_MONEY_UNIT,
      payDeadline: new Date(recordedAt + settlement.payWindowMs),
    };
    const owner = settlement.newLeaseOwner();
    await purchases.open(terms, owner);
    if (!(await this.accounts.addPendingOrder(this.userId, terms.orderId))) {
      await settlement.decline(terms, 'never-charged');
      return { ok: false, error: userErrors.noAccount };
    }
    // The pay deadline assumes the call starts promptly; a late one is never sent (and is declined later).
    if (Date.now() - recordedAt > PAY_START_SLACK_MS) {
      await purchases.release(terms.orderId, owner);
      return { ok: false, error: userErrors.paymentsBusy };
    }

    // 2. Charge the order. The client resends the same order id on retries; the provider charges it once.
    let outcome: PaymentOutcome;
    try {
      outcome = await sso.pay({ user: terms.username, order: terms.orderId, amount: terms.amount });
    } catch (error) {
      if (!(error instanceof SsoUnavailableError)) throw error;
      // It may have been charged all the same: the settlement asks the provider later and credits it then.
      await purchases.release(terms.orderId, owner);
      return { ok: false, error: userErrors.providerUnavailable };
    }

    // 3. Credit exactly once, or drop the order: "too low" is final for this order id.
    if (outcome === 'insufficient-funds') {
      await settlement.decline(terms, 'insufficient-funds');
      return { ok: false, error: userErrors.notEnoughMoney };
    }
    const units = (await settlement.credit(terms)) ?? (await this.accounts.balance(this.userId)).units;
    return { ok: true, quota: unitsToPoints(units) };
  }

  /**
   * Answers the provider's current certification flags, first granting each gift package the
   * caller qualifies for and has not had yet.
   */
  async giftPackage(): Promise<GiftPackage> {
    const official = this.official;
    if (official === undefined) throw notAvailable(userErrors.notOnThisDeployment.message);
    const account = await this.accounts.billingAccount(this.userId);
    if (account === null) throw notAvailable(userErrors.noAccount.message);
    let flags: GiftPackage;
    try {
      flags = await official.sso.certification(account.username);
    } catch (error) {
      if (error instanceof SsoUnavailableError) throw notAvailable(userErrors.providerUnavailable.message);
      throw error;
    }
    for (const gift of ['cert', 'teenager'] as const) {
      if (flags[gift] && !account.grantedGifts.includes(gift)) await this.grantGift(official, gift);
    }
    return flags;
  }

  /**
   * At most once per user, ever: the unique grant record is the claim, and the credit is guarded
   * on the user document, so a request that finds a claim whose credit never happened (a crash
   * in between) completes it, and racing requests credit it once.
   */
  private async grantGift(official: OfficialBilling, gift: Gift): Promise<void> {
    const points = GIFT_POINTS[gift];
    if (!(await official.gifts.claim(this.userId, gift, points))) return;
    await this.accounts.creditGift(this.userId, gift, pointsToUnits(points));
    await official.gifts.markCredited(this.userId, gift);
  }
}
