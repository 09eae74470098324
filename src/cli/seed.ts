import { createAccounts } from '../accounts/index.js';
import { loadDataCommandConfig } from '../config.js';
import { createConversations } from '../conversations/index.js';
import { buildIndexes, connectDatabase } from '../db/database.js';
import { InvalidInput } from '../invalid-input.js';
import { createLogger } from '../logger.js';
import { loadSeed, PROGRESS_EVERY, readSeedFile } from '../seed/seed-file.js';
import { runCommand } from './command.js';

const USAGE = `Usage: npm run seed -- FILE.json

Loads a seed file into the database named by MONGODB_URI (from the environment or .env),
all or nothing: the whole file is checked first, and a file with any problem writes nothing
and lists every problem as "path: message". Loading the same file again changes nothing.
The format is in docs/api.md ("Seed files"); examples/seed.json is one.
Progress is printed on stderr every ${PROGRESS_EVERY} records.`;

await runCommand({
  name: 'seed',
  usage: USAGE,
  options: {},
  positional: 'FILE.json',
  async run({ positionals: [file] }) {
    const { mongodbUri, logLevel } = loadDataCommandConfig();
    if (mongodbUri === undefined) {
      throw new InvalidInput(['MONGODB_URI is not set: name the database to seed (e.g. one started with npm run embedded-db)']);
    }
    const data = await readSeedFile(file!);
    const database = await connectDatabase(mongodbUri);
    try {
      const domains = {
        accounts: createAccounts(database),
        conversations: createConversations(database, createLogger({ logLevel })),
      };
      await buildIndexes(database.connection);
      const loaded = await loadSeed(domains, data, {
        source: file,
        onProgress: ({ written, total, perSecond }) => process.stderr.write(`seed: ${written}/${total} records written (${perSecond}/s)\n`),
      });
      process.stdout.write(`loaded ${loaded.users} users and ${loaded.conversations} conversations from ${file}\n`);
    } finally {
      await database.close();
    }
  },
});
