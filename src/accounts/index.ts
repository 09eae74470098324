import type { StoreDatabase } from '../db/database.js';
import { AccountStore } from './account.store.js';
import { apiKeyModel } from './api-key.model.js';
import { userModel } from './user.model.js';

export { accountRules } from './account-rules.js';
/** What the balance's change feed (`subscriptions/balance-updates.ts`) needs of the stored users: where and how a balance is stored. */
export {
  BALANCE_FIELD_NAMES,
  BALANCE_PARTS,
  type StoredBalance,
  storedBalanceOf,
  storedBalancePart,
  totalMicros,
  USERS_COLLECTION,
} from './user.model.js';

/** Users, their balances and API keys. */
export function createAccounts({ connection, commands }: StoreDatabase) {
  const models = { users: userModel(connection), apiKeys: apiKeyModel(connection) };
  return { models, store: new AccountStore(models.users, models.apiKeys, commands) };
}

export type Accounts = ReturnType<typeof createAccounts>;
