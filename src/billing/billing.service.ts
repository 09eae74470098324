import type { AccountStore } from '../accounts/account.store.js';
import { unitsToPoints } from '../accounts/points.js';
import { UnavailableError } from '../shared/unavailable-error.js';
import { userErrors, type Outcome } from '../shared/user-error.js';

export const MIN_PURCHASE = 1;
export const MAX_PURCHASE = 99_999;

export type BuyOutcome = Outcome<{ quota: number }>;

export interface GiftPackage {
  cert: boolean;
  teenager: boolean;
}

/** One caller's balance, purchases and gift package, built per request. */
export class BillingService {
  constructor(
    private readonly accounts: AccountStore,
    private readonly userId: number,
  ) {}

  async balance(): Promise<number> {
    return unitsToPoints(await this.accounts.balanceUnits(this.userId));
  }

  async buy(quota: number): Promise<BuyOutcome> {
    if (!Number.isInteger(quota) || quota < MIN_PURCHASE || quota > MAX_PURCHASE) {
      return { ok: false, error: userErrors.invalidQuota };
    }
    return { ok: false, error: userErrors.notOnThisDeployment };
  }

  async giftPackage(): Promise<GiftPackage> {
    throw new UnavailableError(userErrors.notOnThisDeployment.message);
  }
}
