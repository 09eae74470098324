import { badUserInput } from '../errors.js';
import type { QueryConversationsArgs, Resolvers } from '../graphql/generated/resolvers.js';
import { fromGlobalId, toGlobalId } from '../graphql/global-id.js';
import type { ConversationKey, PageRequest } from './conversation.service.js';
import { decodeCursor, encodeCursor } from './cursor.js';

export const conversationResolvers: Resolvers = {
  Query: {
    conversations: (_, args, { conversations }) => conversations.page(pageRequest(args)),
    conversation: (_, { number }, { conversations }) => conversations.get(number),
  },
  Mutation: {
    deleteConversation: (_, { id }, { conversations }) => conversations.delete(conversations.own(conversationKeyOf(id))),
    renameConversation: (_, { id, name }, { conversations }) => conversations.rename(conversations.own(conversationKeyOf(id)), name),
    deleteConversationByNumber: (_, { number }, { conversations }) => conversations.delete(number),
    renameConversationByNumber: (_, { number, name }, { conversations }) => conversations.rename(number, name),
    deleteAllConversations: (_, __, { conversations }) => conversations.deleteAll(),
  },
  Conversation: {
    id: ({ userId, id }) => toGlobalId({ type: 'Conversation', userId, number: id }),
    number: ({ id }) => id,
    messages: (conversation, _, { conversations }) => conversations.messagesOf(conversation),
  },
  ConversationConnection: {
    edges: ({ nodes }) => nodes.map((node) => ({ cursor: encodeCursor(node.id), node })),
    pageInfo: (page) => page,
    totalCount: (_, __, { conversations }) => conversations.count(),
  },
  PageInfo: {
    hasNextPage: (page) => page.hasNextPage(),
    hasPreviousPage: (page) => page.hasPreviousPage(),
    startCursor: ({ nodes }) => (nodes.length === 0 ? null : encodeCursor(nodes[0]!.id)),
    endCursor: ({ nodes }) => (nodes.length === 0 ? null : encodeCursor(nodes[nodes.length - 1]!.id)),
  },
  DeleteConversationPayload: {
    deletedConversationId: (outcome) => (outcome.ok ? toGlobalId({ type: 'Conversation', ...outcome.deleted }) : null),
  },
};

/** The conversation a global id names, or null when it names no conversation at all. */
function conversationKeyOf(id: string): ConversationKey | null {
  const key = fromGlobalId(id);
  return key?.type === 'Conversation' ? key : null;
}

/**
 * A connection's arguments as Relay's cursor connections define them: `first`/`after` forward,
 * `last`/`before` backward, or both counts together. Counts and cursors the API cannot honour are
 * the caller's mistake, answered as BAD_USER_INPUT.
 */
function pageRequest({ first, after, last, before }: QueryConversationsArgs): PageRequest {
  if (first != null && first < 0) throw badUserInput('`first` must not be negative');
  if (last != null && last < 0) throw badUserInput('`last` must not be negative');
  return {
    first: first ?? undefined,
    last: last ?? undefined,
    after: cursorArgument(after, 'after'),
    before: cursorArgument(before, 'before'),
  };
}

function cursorArgument(cursor: string | null | undefined, name: 'after' | 'before'): number | undefined {
  if (cursor == null) return undefined;
  const number = decodeCursor(cursor);
  if (number === null) throw badUserInput(`\`${name}\` is not a cursor from this API`);
  return number;
}
