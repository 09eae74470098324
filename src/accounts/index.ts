import type { StoreDatabase } from '../db/database.js';
import { AccountStore } from './account.store.js';
import { apiKeyModel } from './api-key.model.js';
import { userModel } from './user.model.js';

export { accountRules } from './account-rules.js';

/** Users, their balances and API keys. */
export function createAccounts({ connection, commands }: StoreDatabase) {
  const models = { users: userModel(connection), apiKeys: apiKeyModel(connection) };
  return { models, store: new AccountStore(models.users, models.apiKeys, commands) };
}

export type Accounts = ReturnType<typeof createAccounts>;
