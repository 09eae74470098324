import type { UserError } from '../graphql/generated/resolvers.js';
import { PURCHASE_RANGE } from '../limits.js';

/**
 * Expected outcomes that are not successes. They travel as data (`ok:false`
 * plus a `UserError`, whose codes the schema lists), and their `message` is the legacy REST text.
 */

export const userErrors = {
  conversationNotFound: { code: 'NOT_FOUND', message: 'conversation not found' },
  invalidId: { code: 'INVALID_INPUT', message: 'invalid id' },
  invalidName: { code: 'INVALID_INPUT', message: 'invalid name' },
  invalidQuota: { code: 'INVALID_INPUT', message: `invalid quota range (${PURCHASE_RANGE.min} ~ ${PURCHASE_RANGE.max})` },
  notEnoughMoney: { code: 'INSUFFICIENT_FUNDS', message: 'not enough money' },
  notOnThisDeployment: { code: 'UNAVAILABLE', message: 'not available on this deployment' },
  providerUnavailable: { code: 'UNAVAILABLE', message: 'payment provider unavailable, try again later' },
  paymentNotConfirmed: { code: 'UNAVAILABLE', message: 'payment not confirmed yet: the points are added if the payment goes through' },
  noAccount: { code: 'UNAVAILABLE', message: 'no account for this user' },
  paymentsBusy: { code: 'UNAVAILABLE', message: 'payments are busy, nothing was charged, try again later' },
  paymentNotMade: { code: 'UNAVAILABLE', message: 'payment not made: the provider never received it, nothing was charged' },
  invalidIdempotencyKey: { code: 'INVALID_INPUT', message: 'invalid idempotency key (1 ~ 255 visible ASCII characters)' },
  idempotencyKeyReused: { code: 'INVALID_INPUT', message: 'idempotency key already used for another quota, nothing was bought' },
} as const satisfies Record<string, UserError>;

/** The result of a command whose failures are expected outcomes. */
export type Outcome<T extends object = object> = ({ ok: true } & T) | { ok: false; error: UserError };
