import { createAccounts } from '../accounts/index.js';
import { giftGrantModel } from '../billing/gift-grant.model.js';
import { GiftGrantStore } from '../billing/gift-grant.store.js';
import { type Config, loadDataCommandConfig } from '../config.js';
import { createConversations } from '../conversations/index.js';
import { buildIndexes, connectDatabase, type Database } from '../db/database.js';
import { describeMongodbUri } from '../db/uri.js';
import { countLegacyRows } from '../import/chat-nio.js';
import { dryRunTarget, type ImportTarget, storeTarget } from '../import/import-target.js';
import { DEFAULT_BATCH_SIZE, DEFAULT_MAX_DATA_MIB, importChatNio, MAX_DATA_MIB, PROGRESS_EVERY } from '../import/importer.js';
import { openLegacySource } from '../import/open-legacy-source.js';
import { formatSummary, rowsLeftOut } from '../import/summary.js';
import { InvalidInput } from '../invalid-input.js';
import { createLogger } from '../logger.js';
import { runCommand, stopRequests } from './command.js';

const USAGE = `Usage: npm run import -- --from URL [--dry-run] [--batch-size N] [--max-data-mib N]

Moves a Chat Nio database into the database named by MONGODB_URI (from the environment or .env):
users with their balances to the last of six decimals, API keys (stored hashed, so they keep
working), gift packages already granted (never granted again), and conversations with their
messages. URL is one of
  mysql://USER:PASSWORD@HOST:PORT/DATABASE   MySQL or MariaDB (add ?socket=PATH for a Unix socket)
  sqlite:PATH                                Chat Nio's SQLite file, e.g. sqlite:db/chatnio.db

What is there already is left as it is: running it again changes nothing, and a run stopped
half-way (Ctrl-C, SIGTERM: it stops after the current batch; or a lost connection) is finished by
the next. Every row left out is listed on stderr with its table, key and reason, and the exit code
is then 1: text is never altered (a row whose text is not UTF-8 or holds a NUL is left out), and
a cell larger than its column may hold is left out by its size, unread. Progress (every
${PROGRESS_EVERY} rows of a table) goes to stderr, the closing summary to stdout.

  --dry-run          reads and checks everything, writes nothing (needs no MONGODB_URI)
  --batch-size N     rows per database command, 1 to 10000 (default ${DEFAULT_BATCH_SIZE})
  --max-data-mib N   the largest conversation data read, 1 to ${MAX_DATA_MIB} MiB (default ${DEFAULT_MAX_DATA_MIB})

What comes across and what does not: docs/import.md.`;

/** How long one batch's write may take: up to 16 MiB of conversations, to a server that may be busy. */
const WRITE_TIMEOUT_MS = 120_000;

await runCommand({
  name: 'import',
  usage: USAGE,
  options: {
    from: { type: 'string' },
    'dry-run': { type: 'boolean' },
    'batch-size': { type: 'string' },
    'max-data-mib': { type: 'string' },
  },
  async run({ values }) {
    if (values.from === undefined) throw new InvalidInput(['--from is required (see --help)']);
    const batchSize = parseWholeNumber('--batch-size', values['batch-size'], { max: 10_000, default: DEFAULT_BATCH_SIZE });
    const maxDataMib = parseWholeNumber('--max-data-mib', values['max-data-mib'], { max: MAX_DATA_MIB, default: DEFAULT_MAX_DATA_MIB });
    const dryRun = values['dry-run'] === true;
    const { mongodbUri, logLevel } = loadDataCommandConfig();
    if (mongodbUri === undefined && !dryRun) {
      throw new InvalidInput(['MONGODB_URI is not set: name the database to import into (e.g. one started with npm run embedded-db)']);
    }
    const stop = stopRequests(() => process.stderr.write('import: stopping after the current batch\n'));
    const source = await openLegacySource(values.from);
    let database: Database | undefined;
    try {
      const totals = await countLegacyRows(source);
      let target: ImportTarget = dryRunTarget;
      if (!dryRun) {
        database = await connectDatabase(mongodbUri!, undefined, { socketTimeoutMs: WRITE_TIMEOUT_MS });
        target = await databaseTarget(database, logLevel);
      }
      const into = dryRun ? 'nothing (dry run)' : describeMongodbUri(mongodbUri!);
      process.stderr.write(`import: from ${source.description} into ${into}\n`);
      const summary = await importChatNio(source, totals, target, {
        batchSize,
        maxDataBytes: maxDataMib * 1024 * 1024,
        shouldStop: () => stop.aborted,
        onProblem: ({ table, key, reason }) => process.stderr.write(`import: left out: ${table} ${key}: ${reason}\n`),
        onProgress: ({ table, read, total, perSecond }) =>
          process.stderr.write(`import: ${table} ${read}/${total} rows read (${perSecond} rows/s)\n`),
      });
      process.stdout.write(`${formatSummary(summary, { dryRun })}\n`);
      const leftOut = rowsLeftOut(summary);
      if (leftOut > 0) throw new Error(`${leftOut} row${leftOut === 1 ? '' : 's'} left out, listed above`);
    } finally {
      await source.close();
      await database?.close();
    }
  },
});

/** The stores of the database, its indexes built before the first write. */
async function databaseTarget(database: Database, logLevel: Config['logLevel']): Promise<ImportTarget> {
  const accounts = createAccounts(database);
  const conversations = createConversations(database, createLogger({ logLevel }));
  const giftGrants = new GiftGrantStore(giftGrantModel(database.connection), database.commands);
  await buildIndexes(database.connection);
  return storeTarget({ accounts: accounts.store, conversations: conversations.store, giftGrants });
}

function parseWholeNumber(option: string, text: string | undefined, range: { max: number; default: number }): number {
  if (text === undefined) return range.default;
  if (!/^[0-9]{1,5}$/.test(text) || Number(text) < 1 || Number(text) > range.max) {
    throw new InvalidInput([`${option} must be a whole number from 1 to ${range.max}, not "${text}"`]);
  }
  return Number(text);
}
