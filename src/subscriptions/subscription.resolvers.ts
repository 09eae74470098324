import type { Resolvers } from '../graphql/generated/resolvers.js';
import type { ConversationChange } from './conversation-events.js';

export const subscriptionResolvers: Resolvers = {
  Subscription: {
    quota: {
      subscribe: (_, __, { subscriptions }) => subscriptions.balance(),
      resolve: (points: number) => points,
    },
    conversationEvents: {
      subscribe: (_, __, { subscriptions }) => subscriptions.conversationEvents(),
      resolve: (change: ConversationChange) => change,
    },
  },
  ConversationEvent: {
    conversation: ({ kind, id }, _, { conversations }) => (kind === 'DELETED' ? null : conversations.get(id)),
  },
};
