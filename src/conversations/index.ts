import type { Caller } from '../auth/authenticator.js';
import type { StoreDatabase } from '../db/database.js';
import type { Logger } from '../logger.js';
import { conversationModel } from './conversation.model.js';
import { conversationResolvers } from './conversation.resolvers.js';
import { type AnswerCharge, ConversationService } from './conversation.service.js';
import { ConversationStore } from './conversation.store.js';

export { CONVERSATIONS_COLLECTION } from './conversation.model.js';
export { conversationRules } from './conversation-rules.js';

/** Stored conversations: one store, a service per caller and request (with its DataLoaders and the request's budget), and their resolvers. */
export function createConversations({ connection, commands }: StoreDatabase, logger: Logger) {
  const models = { conversations: conversationModel(connection) };
  const store = new ConversationStore(models.conversations, commands, logger);
  return {
    models,
    store,
    resolvers: conversationResolvers,
    forCaller: (caller: Caller, budget: AnswerCharge) => new ConversationService(store, caller.userId, budget),
  };
}

export type Conversations = ReturnType<typeof createConversations>;
