import { badUserInput } from '../errors.js';
import type { Resolvers } from '../graphql/generated/resolvers.js';
import { MAX_PAGE_SIZE } from '../limits.js';
import { decodeCursor, encodeCursor } from './cursor.js';

export const conversationResolvers: Resolvers = {
  Query: {
    conversations: (_, { first, after }, { conversations }) => {
      const limit = first ?? MAX_PAGE_SIZE;
      if (limit < 0) throw badUserInput('`first` must not be negative');
      if (after == null) return conversations.page(limit);
      const beforeId = decodeCursor(after);
      if (beforeId === null) throw badUserInput('`after` is not a cursor from this API');
      return conversations.page(limit, beforeId);
    },
    conversation: (_, { id }, { conversations }) => conversations.get(id),
  },
  Mutation: {
    deleteConversation: (_, { id }, { conversations }) => conversations.delete(id),
    renameConversation: (_, { id, name }, { conversations }) => conversations.rename(id, name),
    deleteAllConversations: (_, __, { conversations }) => conversations.deleteAll(),
  },
  Conversation: {
    messages: (conversation, _, { conversations }) => conversations.messagesOf(conversation),
  },
  ConversationConnection: {
    edges: ({ nodes }) => nodes.map((node) => ({ cursor: encodeCursor(node.id), node })),
    pageInfo: ({ nodes, hasNextPage }) => ({
      hasNextPage,
      endCursor: nodes.length === 0 ? null : encodeCursor(nodes[nodes.length - 1]!.id),
    }),
    totalCount: (_, __, { conversations }) => conversations.count(),
  },
};
