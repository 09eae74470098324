import { z } from 'zod';

import type { UserError } from '../graphql/generated/resolvers.js';
import { IDEMPOTENCY_KEY, PURCHASE_RANGE } from '../limits.js';
import { userErrors } from '../shared/user-error.js';

/**
 * The rules of a purchase's input, each stated once: `BillingService.buy` applies them to every
 * buy, and the legacy endpoint's inputs (`rest/inputs.ts`) read `POST /buy` by the same schemas,
 * which also describe it in the OpenAPI document.
 */

/** The points one purchase buys: a whole number within `PURCHASE_RANGE`. */
export const purchaseQuota = z
  .int({ error: userErrors.invalidQuota.message })
  .min(PURCHASE_RANGE.min, { error: userErrors.invalidQuota.message })
  .max(PURCHASE_RANGE.max, { error: userErrors.invalidQuota.message });

/** An idempotency key: 1 to 255 visible ASCII characters (`IDEMPOTENCY_KEY`). */
export const purchaseIdempotencyKey = z
  .string({ error: userErrors.invalidIdempotencyKey.message })
  .regex(IDEMPOTENCY_KEY, { error: userErrors.invalidIdempotencyKey.message });

/** Why a purchase is refused before anything is looked up (its quota first, then its key), or undefined when its input is good. */
export function purchaseRefusal(quota: number, idempotencyKey: string | undefined): UserError | undefined {
  if (!purchaseQuota.safeParse(quota).success) return userErrors.invalidQuota;
  if (idempotencyKey !== undefined && !purchaseIdempotencyKey.safeParse(idempotencyKey).success) return userErrors.invalidIdempotencyKey;
  return undefined;
}
