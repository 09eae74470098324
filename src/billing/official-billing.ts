import type { AccountStore } from '../accounts/account.store.js';
import type { Logger } from '../logger.js';
import type { GiftGrantModel } from './gift-grant.model.js';
import { GiftGrantStore } from './gift-grant.store.js';
import type { PurchaseModel } from './purchase.model.js';
import { PurchaseStore } from './purchase.store.js';
import { PurchaseSettlement } from './settlement.js';
import type { SsoClient } from './sso-client.js';

/** What buying and the gift package need on the official deployment, shared by every request. */
export interface OfficialBilling {
  sso: SsoClient;
  purchases: PurchaseStore;
  gifts: GiftGrantStore;
  settlement: PurchaseSettlement;
}

export function createOfficialBilling(
  models: { purchases: PurchaseModel; giftGrants: GiftGrantModel },
  accounts: AccountStore,
  sso: SsoClient,
  logger: Logger,
): OfficialBilling {
  const purchases = new PurchaseStore(models.purchases);
  return {
    sso,
    purchases,
    gifts: new GiftGrantStore(models.giftGrants),
    settlement: new PurchaseSettlement(accounts, purchases, sso, logger),
  };
}
