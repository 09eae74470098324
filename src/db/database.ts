import mongoose, { type Connection } from 'mongoose';
import { AccountStore } from '../accounts/account.store.js';
import type { Stores } from '../context.js';
import { ConversationStore } from '../conversations/conversation.store.js';
import { bindModels, type Models } from './models.js';

export interface Database {
  connection: Connection;
  models: Models;
  stores: Stores;
  /** Resolves when the server answers a ping within `timeoutMs`. */
  ping(timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

/** How long an operation waits for an unreachable server before failing, instead of hanging. */
const SERVER_SELECTION_TIMEOUT_MS = 3_000;

export async function connectDatabase(uri: string): Promise<Database> {
  const connection = mongoose.createConnection(uri, {
    serverSelectionTimeoutMS: SERVER_SELECTION_TIMEOUT_MS,
    // Fail at once while disconnected rather than queueing requests in memory.
    bufferCommands: false,
    // Command events feed the database metrics and let tests count commands per request.
    monitorCommands: true,
  });
  await connection.asPromise();
  const models = bindModels(connection);
  // Unique indexes must exist before the first write relies on them.
  await Promise.all(Object.values(models).map((model) => model.init()));
  return {
    connection,
    models,
    stores: {
      accounts: new AccountStore(models.users, models.apiKeys),
      conversations: new ConversationStore(models.conversations),
    },
    async ping(timeoutMs) {
      await connection.db!.command({ ping: 1 }, { timeoutMS: timeoutMs });
    },
    close: () => connection.close(),
  };
}
