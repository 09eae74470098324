import { describe, expect, it } from 'vitest';

import type { AccountStore, BillingAccount } from '../../../src/accounts/account.store.js';
import { BillingService } from '../../../src/billing/billing.service.js';
import type { Gift, GiftPackage } from '../../../src/billing/gift.js';
import type { OfficialBilling } from '../../../src/billing/official-billing.js';
import { SsoUnavailableError } from '../../../src/billing/sso-client.js';
import { PURCHASE_RANGE } from '../../../src/limits.js';
import { purchaseBody, purchaseHeaders } from '../../../src/rest/inputs.js';
import { userErrors } from '../../../src/shared/user-error.js';

/** Accounts with one user (or none), recording the gifts credited. */
function accountsOf(account: BillingAccount | null) {
  const credited: Gift[] = [];
  const store: Pick<AccountStore, 'billingAccount' | 'creditGift'> = {
    billingAccount: async () => account,
    creditGift: async (_, gift) => {
      credited.push(gift);
      return true;
    },
  };
  return { store: store as AccountStore, credited };
}

/** The official deployment's parts a gift package uses: the provider's flags (or its failure) and the grant records. */
function officialWith(certification: () => Promise<GiftPackage>): OfficialBilling {
  const official: Pick<OfficialBilling, 'sso' | 'gifts'> = {
    sso: { certification } as Partial<OfficialBilling['sso']> as OfficialBilling['sso'],
    gifts: {
      uncredited: async () => [],
      claim: async () => true,
      markCredited: async () => undefined,
    } as unknown as OfficialBilling['gifts'],
  };
  return official as OfficialBilling;
}

const ann: BillingAccount = { username: 'ann', pendingOrders: [], grantedGifts: [] };

describe('the gift package’s outcomes', () => {
  it('answers "not on this deployment" as data, calling nothing', async () => {
    const { store } = accountsOf(ann);
    await expect(new BillingService(store, 1).giftPackage()).resolves.toEqual({ ok: false, error: userErrors.notOnThisDeployment });
  });

  it('answers a user without an account as data', async () => {
    const { store } = accountsOf(null);
    const service = new BillingService(
      store,
      1,
      officialWith(async () => ({ cert: true, teenager: true })),
    );
    await expect(service.giftPackage()).resolves.toEqual({ ok: false, error: userErrors.noAccount });
  });

  it('answers a provider that does not answer as data', async () => {
    const { store, credited } = accountsOf(ann);
    const down = new SsoUnavailableError('GET /app/cert', { reason: 'did not answer within 3000 ms (3 attempts)' });
    const service = new BillingService(
      store,
      1,
      officialWith(async () => Promise.reject(down)),
    );
    await expect(service.giftPackage()).resolves.toEqual({ ok: false, error: userErrors.providerUnavailable });
    expect(credited).toEqual([]);
  });

  it('lets anything unexpected of the provider through, as a failure', async () => {
    const { store } = accountsOf(ann);
    const service = new BillingService(
      store,
      1,
      officialWith(async () => Promise.reject(new TypeError('bug'))),
    );
    await expect(service.giftPackage()).rejects.toThrow(TypeError);
  });

  it('answers the flags once it credited the gifts they grant', async () => {
    const { store, credited } = accountsOf(ann);
    const service = new BillingService(
      store,
      1,
      officialWith(async () => ({ cert: true, teenager: false })),
    );
    await expect(service.giftPackage()).resolves.toEqual({ ok: true, package: { cert: true, teenager: false } });
    expect(credited).toEqual(['cert']);
  });
});

describe('one rule per purchase input, for POST /buy and the service alike', () => {
  // The service is asked without the official deployment: input it takes answers "not on this deployment".
  const service = new BillingService(accountsOf(ann).store, 1);

  it.each([PURCHASE_RANGE.min, 500, PURCHASE_RANGE.max, 0, -1, PURCHASE_RANGE.max + 1, 1.5, 2 ** 53])(
    'judges quota %d alike',
    async (quota) => {
      const rest = purchaseBody.safeParse({ quota });
      const outcome = await service.buy(quota);
      expect(outcome).toEqual({ ok: false, error: rest.success ? userErrors.notOnThisDeployment : userErrors.invalidQuota });
      if (!rest.success) expect(rest.error.issues[0]?.message).toBe(userErrors.invalidQuota.message);
    },
  );

  it.each(['a', 'x'.repeat(255), 'x'.repeat(256), 'a b', '', 'ключ', 'tab\there', '~!@#'])(
    'judges idempotency key %j alike',
    async (key) => {
      const rest = purchaseHeaders.safeParse({ 'idempotency-key': key });
      const outcome = await service.buy(5, key);
      expect(outcome).toEqual({ ok: false, error: rest.success ? userErrors.notOnThisDeployment : userErrors.invalidIdempotencyKey });
      if (!rest.success) expect(rest.error.issues[0]?.message).toBe(userErrors.invalidIdempotencyKey.message);
    },
  );

  it('refuses a bad quota before a bad key, as the endpoint reads the body first', async () => {
    await expect(service.buy(0, 'a b')).resolves.toEqual({ ok: false, error: userErrors.invalidQuota });
  });
});
