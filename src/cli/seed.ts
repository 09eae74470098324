import { createAccounts } from '../accounts/index.js';
import { loadConfig } from '../config.js';
import { createConversations } from '../conversations/index.js';
import { buildIndexes, connectDatabase } from '../db/database.js';
import { createLogger } from '../logger.js';
import { loadSeed, readSeedFile } from '../seed/seed-file.js';

// npm run seed -- FILE.json: loads a seed file into the database named by MONGODB_URI.
const [file] = process.argv.slice(2);
const config = loadConfig();
if (!file) fail('usage: npm run seed -- FILE.json');
if (config.mongodbUri === undefined) {
  fail('MONGODB_URI is not set: name the database to seed (e.g. one started with `npm run embedded-db`)');
}
const database = await connectDatabase(config.mongodbUri);
try {
  const domains = {
    accounts: createAccounts(database.connection),
    conversations: createConversations(database.connection, createLogger(config)),
  };
  await buildIndexes(database.connection);
  const loaded = await loadSeed(domains, await readSeedFile(file));
  process.stdout.write(`loaded ${loaded.users} users and ${loaded.conversations} conversations from ${file}\n`);
} catch (error) {
  process.stderr.write(`seeding failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
} finally {
  await database.close();
}

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}
