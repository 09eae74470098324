import type { Resolvers } from '../graphql/generated/resolvers.js';
import { toGlobalId } from '../graphql/global-id.js';
import type { BalanceEvent } from './balance-updates.js';
import type { ConversationChange } from './conversation-events.js';

export const subscriptionResolvers: Resolvers = {
  Subscription: {
    quota: {
      subscribe: (_, __, { subscriptions }) => subscriptions.balance(),
      resolve: ({ points }: BalanceEvent) => points,
    },
    conversationEvents: {
      subscribe: (_, __, { subscriptions }) => subscriptions.conversationEvents(),
      resolve: (change: ConversationChange) => change,
    },
  },
  ConversationEvent: {
    conversationId: ({ userId, number }) => toGlobalId({ type: 'Conversation', userId, number }),
    conversation: ({ kind, number }, _, { conversations }) => (kind === 'DELETED' ? null : conversations.get(number)),
    deletedConversationId: ({ kind, userId, number }) => (kind === 'DELETED' ? toGlobalId({ type: 'Conversation', userId, number }) : null),
  },
};
