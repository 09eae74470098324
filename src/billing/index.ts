import type { AccountStore } from '../accounts/account.store.js';
import type { Caller } from '../auth/authenticator.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { StoreDatabase } from '../db/database.js';
import type { Logger } from '../logger.js';
import type { PurchaseTracing } from '../observability/tracing.js';
import { billingResolvers } from './billing.resolvers.js';
import { BillingService } from './billing.service.js';
import { giftGrantModel } from './gift-grant.model.js';
import { createOfficialBilling } from './official-billing.js';
import { purchaseModel } from './purchase.model.js';
import type { SettlementSettings } from './purchase-lifecycle.js';

export interface BillingOptions {
  database: StoreDatabase;
  accounts: AccountStore;
  /** The SSO provider, on the official deployment only: buying and the gift package exist only there. */
  sso: Config['sso'];
  settlement: SettlementSettings;
  logger: Logger;
  /** The system's unless a test moves time by hand. */
  clock?: Clock;
  /** How purchases are traced; not at all unless given. */
  tracing?: PurchaseTracing;
}

/** Balances, purchases and gift packages: a service per caller and their resolvers. */
export function createBilling({ database, accounts, sso, settlement, logger, clock, tracing }: BillingOptions) {
  const models = { purchases: purchaseModel(database.connection), giftGrants: giftGrantModel(database.connection) };
  const officialBilling =
    sso === undefined
      ? undefined
      : createOfficialBilling({ models, commands: database.commands, accounts, sso, settlement, logger, clock, tracing });
  return {
    models,
    /** Present on the official deployment: purchases (whose sweep settles the unfinished ones), gifts and the SSO client. */
    official: officialBilling,
    resolvers: billingResolvers,
    forCaller: (caller: Caller) => new BillingService(accounts, caller.userId, officialBilling),
  };
}

export type Billing = ReturnType<typeof createBilling>;
