import type { Connection } from 'mongoose';
import type { AccountStore } from '../accounts/account.store.js';
import type { Caller } from '../auth/authenticator.js';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import { billingResolvers } from './billing.resolvers.js';
import { BillingService } from './billing.service.js';
import { giftGrantModel } from './gift-grant.model.js';
import { createOfficialBilling } from './official-billing.js';
import { purchaseModel } from './purchase.model.js';
import { createSsoClient } from './sso-client.js';

export interface BillingOptions {
  connection: Connection;
  accounts: AccountStore;
  /** The SSO provider, on the official deployment only: buying and the gift package exist only there. */
  sso: Config['sso'];
  logger: Logger;
}

/** Balances, purchases and gift packages: a service per caller and their resolvers. */
export function createBilling({ connection, accounts, sso, logger }: BillingOptions) {
  const models = { purchases: purchaseModel(connection), giftGrants: giftGrantModel(connection) };
  const official = sso === undefined ? undefined : createOfficialBilling(models, accounts, createSsoClient(sso), logger);
  return {
    models,
    /** Present on the official deployment; its settlement sweeps unfinished purchases. */
    official,
    resolvers: billingResolvers,
    forCaller: (caller: Caller) => new BillingService(accounts, caller.userId, official),
  };
}

export type Billing = ReturnType<typeof createBilling>;
