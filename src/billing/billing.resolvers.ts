import { notAvailable } from '../errors.js';
import type { Resolvers } from '../graphql/generated/resolvers.js';

export const billingResolvers: Resolvers = {
  Query: {
    quota: (_, __, { billing }) => billing.balance(),
    // The schema's `GiftPackage!` has no room for an outcome: a failure is the field's UNAVAILABLE error.
    giftPackage: async (_, __, { billing }) => {
      const outcome = await billing.giftPackage();
      if (!outcome.ok) throw notAvailable(outcome.error.message);
      return outcome.package;
    },
  },
  Mutation: {
    buy: (_, { quota, idempotencyKey }, { billing }) => billing.buy(quota, idempotencyKey ?? undefined),
  },
};
