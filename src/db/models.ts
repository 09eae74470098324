import type { Connection } from 'mongoose';
import { apiKeyModel } from '../accounts/api-key.model.js';
import { userModel } from '../accounts/user.model.js';
import { giftGrantModel } from '../billing/gift-grant.model.js';
import { purchaseModel } from '../billing/purchase.model.js';
import { conversationModel } from '../conversations/conversation.model.js';

/** Every Mongoose model, bound to one connection (so several gateways can live in one process). */
export function bindModels(connection: Connection) {
  return {
    users: userModel(connection),
    apiKeys: apiKeyModel(connection),
    conversations: conversationModel(connection),
    purchases: purchaseModel(connection),
    giftGrants: giftGrantModel(connection),
  };
}

export type Models = ReturnType<typeof bindModels>;
