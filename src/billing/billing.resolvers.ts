import type { Resolvers } from '../graphql/generated/resolvers.js';

export const billingResolvers: Resolvers = {
  Query: {
    quota: (_, __, { billing }) => billing.balance(),
    giftPackage: (_, __, { billing }) => billing.giftPackage(),
  },
  Mutation: {
    buy: (_, { quota, idempotencyKey }, { billing }) => billing.buy(quota, idempotencyKey ?? undefined),
  },
};
