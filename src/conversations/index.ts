import type { Connection } from 'mongoose';

import type { Caller } from '../auth/authenticator.js';
import type { Logger } from '../logger.js';
import { conversationModel } from './conversation.model.js';
import { conversationResolvers } from './conversation.resolvers.js';
import { ConversationService } from './conversation.service.js';
import { ConversationStore } from './conversation.store.js';

/** Stored conversations: one store, a service per caller (with its DataLoaders), and their resolvers. */
export function createConversations(connection: Connection, logger: Logger) {
  const models = { conversations: conversationModel(connection) };
  const store = new ConversationStore(models.conversations, logger);
  return {
    models,
    store,
    resolvers: conversationResolvers,
    forCaller: (caller: Caller) => new ConversationService(store, caller.userId),
  };
}

export type Conversations = ReturnType<typeof createConversations>;
