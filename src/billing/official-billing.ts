import type { Metric } from 'prom-client';

import type { AccountStore } from '../accounts/account.store.js';
import { type Clock, systemClock } from '../clock.js';
import type { SsoConfig } from '../config.js';
import type { DatabaseCommands } from '../db/database-commands.js';
import type { Logger } from '../logger.js';
import type { PurchaseTracing } from '../observability/tracing.js';
import type { GiftGrantModel } from './gift-grant.model.js';
import { GiftGrantStore } from './gift-grant.store.js';
import type { PurchaseModel } from './purchase.model.js';
import { PurchaseStore } from './purchase.store.js';
import { PurchaseLifecycle, type SettlementSettings } from './purchase-lifecycle.js';
import { purchaseMetrics } from './purchase-metrics.js';
import { type SettlementSweep, startSettlementSweep } from './settlement-sweep.js';
import { createSsoClient, type SsoClient } from './sso-client.js';

/** What buying and the gift package need on the official deployment, shared by every request. */
export interface OfficialBilling {
  sso: SsoClient;
  purchases: PurchaseLifecycle;
  gifts: GiftGrantStore;
  /** The purchase metrics, for the gateway's registry. */
  metrics: Metric[];
  /** Starts settling unfinished purchases on a timer that sleeps at most `intervalMs`. */
  startSweep(intervalMs: number): SettlementSweep;
}

export interface OfficialBillingOptions {
  models: { purchases: PurchaseModel; giftGrants: GiftGrantModel };
  commands: DatabaseCommands;
  accounts: AccountStore;
  sso: SsoConfig;
  settlement: SettlementSettings;
  logger: Logger;
  /** The system's unless a test moves time by hand. */
  clock?: Clock;
  /** How purchases are traced; not at all unless given. */
  tracing?: PurchaseTracing;
}

export function createOfficialBilling(options: OfficialBillingOptions): OfficialBilling {
  const { logger, settlement, clock = systemClock } = options;
  const sso = createSsoClient({ ...options.sso, logger });
  const store = new PurchaseStore(options.models.purchases, options.commands);
  const metrics = purchaseMetrics(store, clock);
  const purchases = new PurchaseLifecycle(options.accounts, store, sso, settlement, clock, metrics, logger, options.tracing);
  return {
    sso,
    purchases,
    gifts: new GiftGrantStore(options.models.giftGrants, options.commands),
    metrics: metrics.all,
    startSweep: (intervalMs) => startSettlementSweep(purchases, clock, intervalMs, logger),
  };
}
