import type { AccountStore } from '../accounts/account.store.js';
import { microsToPoints, pointsToMicros } from '../accounts/points.js';
import type { UserError } from '../graphql/generated/resolvers.js';
import { type Outcome, userErrors } from '../shared/user-error.js';
import { type Gift, GIFT_POINTS, type GiftPackage, GIFTS } from './gift.js';
import type { OfficialBilling } from './official-billing.js';
import type { BuyResult } from './purchase-lifecycle.js';
import { purchaseRefusal } from './purchase-rules.js';
import { SsoUnavailableError } from './sso-client.js';

export type BuyOutcome = Outcome<{ quota: number }>;

/** The gift package's outcome: the provider's flags, or why they could not be asked for (as buy's failures, data). */
export type GiftPackageOutcome = Outcome<{ package: GiftPackage }>;

/** What the buyer is told when a buy did not end credited. */
const BUY_FAILURES: Record<Exclude<BuyResult['outcome'], 'credited'>, UserError> = {
  'insufficient-funds': userErrors.notEnoughMoney,
  'not-confirmed': userErrors.paymentNotConfirmed,
  'no-account': userErrors.noAccount,
  'not-sent': userErrors.paymentsBusy,
  'key-reused': userErrors.idempotencyKeyReused,
  'not-made': userErrors.paymentNotMade,
};

/**
 * One caller's balance, purchases and gift package, built per request. Buying and the gift
 * package exist only on the official deployment (`official` given); elsewhere they answer
 * "not available" and call nothing. Their expected failures are outcomes, never thrown.
 */
export class BillingService {
  constructor(
    private readonly accounts: AccountStore,
    private readonly userId: number,
    private readonly official?: OfficialBilling,
  ) {}

  /** One database read, plus the settlement of the caller's unfinished purchases that are due, when there are any. */
  async balance(): Promise<number> {
    const { micros, pendingOrders } = await this.accounts.balance(this.userId);
    if (this.official === undefined || pendingOrders.length === 0) return microsToPoints(micros);
    const credited = await this.official.purchases.settleOrdersOf(pendingOrders);
    return microsToPoints(credited ? (await this.accounts.balance(this.userId)).micros : micros);
  }

  /**
   * Success always means the points are on the balance; the life of the purchase is in `PurchaseLifecycle`.
   * With an idempotency key, the caller's retries within a day buy nothing more: they get the
   * first buy's outcome.
   */
  async buy(quota: number, idempotencyKey?: string): Promise<BuyOutcome> {
    const refusal = purchaseRefusal(quota, idempotencyKey);
    if (refusal !== undefined) return { ok: false, error: refusal };
    const official = this.official;
    if (official === undefined) return { ok: false, error: userErrors.notOnThisDeployment };
    const account = await this.accounts.billingAccount(this.userId);
    if (account === null) return { ok: false, error: userErrors.noAccount };
    if (account.pendingOrders.length > 0) await official.purchases.settleOrdersOf(account.pendingOrders);

    const result = await official.purchases.buy({ userId: this.userId, username: account.username, quota, idempotencyKey });
    if (result.outcome === 'credited') return { ok: true, quota: microsToPoints(result.balanceMicros) };
    return { ok: false, error: BUY_FAILURES[result.outcome] };
  }

  /**
   * Answers the provider's current certification flags, first granting each gift package the
   * caller qualifies for and has not had yet. Not on this deployment, no account and a provider
   * that does not answer are outcomes (`ok: false`), as they are for `buy`.
   */
  async giftPackage(): Promise<GiftPackageOutcome> {
    const official = this.official;
    if (official === undefined) return { ok: false, error: userErrors.notOnThisDeployment };
    const account = await this.accounts.billingAccount(this.userId);
    if (account === null) return { ok: false, error: userErrors.noAccount };
    let flags: GiftPackage;
    try {
      flags = await official.sso.certification(account.username);
    } catch (error) {
      if (error instanceof SsoUnavailableError) return { ok: false, error: userErrors.providerUnavailable };
      throw error;
    }
    // A claim cut off by a crash is completed even if the flag has gone since: it was granted.
    const unfinished = await official.gifts.uncredited(this.userId);
    for (const gift of GIFTS) {
      if (unfinished.includes(gift) || (flags[gift] && !account.grantedGifts.includes(gift))) await this.grantGift(official, gift);
    }
    return { ok: true, package: flags };
  }

  /**
   * At most once per user, ever: the unique grant record is the claim, and the credit is guarded
   * on the user document, so a request that finds a claim whose credit never happened (a crash
   * in between) completes it, and racing requests credit it once.
   */
  private async grantGift(official: OfficialBilling, gift: Gift): Promise<void> {
    const points = GIFT_POINTS[gift];
    if (!(await official.gifts.claim(this.userId, gift, points))) return;
    await this.accounts.creditGift(this.userId, gift, pointsToMicros(points));
    await official.gifts.markCredited(this.userId, gift);
  }
}
