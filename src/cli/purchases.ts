import { createAccounts } from '../accounts/index.js';
import { createBilling } from '../billing/index.js';
import { purchaseModel, type PurchaseRecord } from '../billing/purchase.model.js';
import { PurchaseStore } from '../billing/purchase.store.js';
import { loadVariables } from '../config.js';
import { connectDatabase, type Database } from '../db/database.js';
import { InvalidInput } from '../invalid-input.js';
import { createLogger } from '../logger.js';
import { runCommand } from './command.js';

const USAGE = `Usage: npm run purchases -- --pending [--user ID]
       npm run purchases -- --review [--user ID]
       npm run purchases -- --recheck ORDER
       npm run purchases -- --close ORDER

Shows the purchases of the official deployment whose fate is still open, or settles one now.
  --pending        purchases not settled yet (opened or pending), oldest first:
                   order id, user, amount, points, state, age, checks so far, what the last check found
  --review         only those still unsettled past SETTLEMENT_HORIZON (marked for review)
  --user ID        only this user's purchases
  --recheck ORDER  asks the SSO provider once what became of ORDER and settles the purchase
                   accordingly (a declined purchase found paid is credited)
  --close ORDER    for an order the provider confirmed it never received: asks it once, settles
                   the purchase as --recheck does, and while the answer is still unknown closes it
                   as declined (closed-by-operator); a later --recheck credits it should the
                   provider charge it after all
  --help           this text
Reads MONGODB_URI (the gateways' database); --recheck and --close also read SSO_URL, SSO_SECRET,
SSO_TIMEOUT_MS, SSO_ATTEMPTS, SETTLEMENT_HORIZON and SETTLEMENT_BACKOFF_MAX_MS.
Exit codes: 0 done, 1 the database, the provider or the order could not be found, 2 bad arguments or configuration.`;

/** At most this many purchases are listed. */
const LIST_LIMIT = 1_000;

type Command = { kind: 'list'; needingReview: boolean; userId: number | undefined } | { kind: 'recheck' | 'close'; orderId: string };

/** What to do, from the options; a wrong combination is one line with exit code 2. */
function commandOf(values: { pending?: boolean; review?: boolean; user?: string; recheck?: string; close?: string }): Command {
  const modes = [values.pending, values.review, values.recheck !== undefined, values.close !== undefined].filter(Boolean).length;
  if (modes !== 1) throw usage('give exactly one of --pending, --review, --recheck ORDER or --close ORDER');
  for (const kind of ['recheck', 'close'] as const) {
    const orderId = values[kind];
    if (orderId === undefined) continue;
    if (values.user !== undefined) throw usage(`--user goes with --pending or --review, not --${kind}`);
    if (orderId.trim() === '') throw usage(`--${kind} needs an order id`);
    return { kind, orderId };
  }
  if (values.user !== undefined && !/^[1-9][0-9]{0,15}$/.test(values.user)) {
    throw usage(`--user must be a user id (a positive integer), not ${JSON.stringify(values.user)}`);
  }
  return { kind: 'list', needingReview: values.review === true, userId: values.user === undefined ? undefined : Number(values.user) };
}

function usage(problem: string): InvalidInput {
  return new InvalidInput([`${problem} (see --help)`]);
}

async function openDatabase(): Promise<Database> {
  const { MONGODB_URI } = loadVariables(['MONGODB_URI']);
  if (MONGODB_URI === undefined) throw usage('MONGODB_URI is not set: give the database the gateways use');
  try {
    return await connectDatabase(MONGODB_URI);
  } catch (error) {
    throw new Error(`cannot reach the database: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}

async function list(command: Extract<Command, { kind: 'list' }>): Promise<void> {
  const database = await openDatabase();
  try {
    const store = new PurchaseStore(purchaseModel(database.connection), database.commands);
    const purchases = await store.unfinished({ ...command, limit: LIST_LIMIT });
    const what = (count: number) => {
      const noun = count === 1 ? 'purchase' : 'purchases';
      return command.needingReview ? `${noun} needing review` : `unsettled ${noun}`;
    };
    if (purchases.length === 0) {
      process.stdout.write(`no ${what(0)}\n`);
      return;
    }
    process.stdout.write(`${table(purchases, Date.now())}\n`);
    const cut = purchases.length === LIST_LIMIT ? ` (the oldest ${LIST_LIMIT} shown)` : '';
    process.stdout.write(`${purchases.length} ${what(purchases.length)}${cut}\n`);
  } finally {
    await database.close();
  }
}

/** Asks the provider about one order and settles it; with `close`, an order still unknown is closed too. */
async function settleOne(orderId: string, close: boolean): Promise<void> {
  const variables = loadVariables([
    'SSO_URL',
    'SSO_SECRET',
    'SSO_TIMEOUT_MS',
    'SSO_ATTEMPTS',
    'SETTLEMENT_HORIZON',
    'SETTLEMENT_BACKOFF_MAX_MS',
  ]);
  const missing = (['SSO_URL', 'SSO_SECRET'] as const).filter((name) => variables[name] === undefined);
  if (missing.length > 0) throw usage(`${missing.join(' and ')} must be set for --${close ? 'close' : 'recheck'}`);
  const database = await openDatabase();
  try {
    const billing = createBilling({
      database,
      accounts: createAccounts(database).store,
      sso: {
        url: variables.SSO_URL!,
        secret: variables.SSO_SECRET!,
        timeoutMs: variables.SSO_TIMEOUT_MS,
        attempts: variables.SSO_ATTEMPTS,
      },
      settlement: { horizonMs: variables.SETTLEMENT_HORIZON, backoffMaxMs: variables.SETTLEMENT_BACKOFF_MAX_MS },
      // Failures are told on stderr by this command, in one line.
      logger: createLogger({ logLevel: 'silent' }),
    });
    const { purchases } = billing.official!;
    const found = await (close ? purchases.closeUnknown(orderId) : purchases.recheck(orderId));
    if (found === null) throw new Error(`no purchase has order id ${orderId}`);
    const change = found.before === found.after ? `still ${found.after}` : `${found.before} → ${found.after}`;
    process.stdout.write(`order ${orderId}: the provider says ${found.answer}; ${change}\n`);
  } finally {
    await database.close();
  }
}

function table(purchases: PurchaseRecord[], now: number): string {
  const rows = [
    ['ORDER', 'USER', 'AMOUNT', 'POINTS', 'STATE', 'AGE', 'CHECKS', 'LAST CHECK'],
    ...purchases.map((purchase) => [
      purchase.orderId,
      String(purchase.userId),
      String(purchase.amount),
      String(purchase.quota),
      purchase.reviewSince === undefined ? purchase.state : `${purchase.state}, review`,
      age(now - purchase.openedAt.getTime()),
      String(purchase.checks),
      purchase.lastCheck ?? '',
    ]),
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** e.g. `42s`, `3m05s`, `2h10m`, `3d04h`. */
function age(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  const two = (value: number) => String(value).padStart(2, '0');
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3_600) return `${Math.floor(seconds / 60)}m${two(seconds % 60)}s`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3_600)}h${two(Math.floor(seconds / 60) % 60)}m`;
  return `${Math.floor(seconds / 86_400)}d${two(Math.floor(seconds / 3_600) % 24)}h`;
}

await runCommand({
  name: 'purchases',
  usage: USAGE,
  options: {
    pending: { type: 'boolean' },
    review: { type: 'boolean' },
    user: { type: 'string' },
    recheck: { type: 'string' },
    close: { type: 'string' },
  },
  async run({ values }) {
    const command = commandOf(values);
    if (command.kind === 'list') await list(command);
    else await settleOne(command.orderId, command.kind === 'close');
  },
});
