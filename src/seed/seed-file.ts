import { readFile } from 'node:fs/promises';

import { type ParseError, parseTree, printParseErrorCode } from 'jsonc-parser';
import { z } from 'zod';

import type { AccountStore } from '../accounts/account.store.js';
import { accountRules } from '../accounts/index.js';
import { pointsToMicros } from '../accounts/points.js';
import { API_KEY_PREFIX, hashApiKey } from '../auth/api-key.js';
import type { ConversationStore } from '../conversations/conversation.store.js';
import { conversationRules } from '../conversations/index.js';
import { InvalidInput } from '../invalid-input.js';
import { describeIssue } from '../shared/field-rules.js';
import { isRecord } from '../shared/is-record.js';

/** Records written per database command. */
const BATCH_SIZE = 1_000;
/** Progress is reported each time this many more records are written. */
export const PROGRESS_EVERY = 2_000;

/** A user entry: the account's fields (`accountRules`), its balance as `quota`, its plain API keys. */
const userSchema = z.strictObject({
  id: accountRules.userId,
  username: accountRules.username,
  quota: accountRules.balance.default(0),
  apiKeys: z.array(accountRules.apiKey).default([]),
});

/** A conversation entry: a conversation as stored (`conversationRules`). */
const conversationSchema = conversationRules.record;

const fileSchema = z.strictObject({
  users: z.array(z.unknown()).default([]),
  conversations: z.array(z.unknown()).default([]),
});

/** The seed file's format (docs/api.md, "Seed files"), as written: optional fields may be left out. */
export interface SeedData {
  users?: z.input<typeof userSchema>[];
  conversations?: z.input<typeof conversationSchema>[];
}

type SeedUser = z.output<typeof userSchema>;
type SeedConversation = z.output<typeof conversationSchema>;

/** Where seed data goes: the accounts and conversations domains (`createAccounts`, `createConversations`). */
export interface SeedTarget {
  accounts: { store: AccountStore };
  conversations: { store: ConversationStore };
}

export interface SeedProgress {
  written: number;
  total: number;
  /** Records written per second so far. */
  perSecond: number;
}

export interface SeedOptions {
  /** Where the data comes from (a file's name), put before each problem. */
  source?: string;
  /** Called every `PROGRESS_EVERY` records written. */
  onProgress?: (progress: SeedProgress) => void;
}

/** A seed that cannot be loaded: each problem is `path: message`; nothing was written. */
export class SeedError extends InvalidInput {}

/**
 * Loads seed data, all or nothing. The whole of it is checked first (types, id
 * ranges, owners in the data or the database, duplicates in the data and against the database's
 * unique keys); any problem throws a `SeedError` listing them all, before anything is written.
 * Then users are upserted by id (balance set to `quota`), API keys by hash, conversations by
 * (userId, id), and each user's conversation-id sequence moved past the highest id loaded, in
 * batches. Loading the same data again changes nothing.
 */
export async function loadSeed(
  target: SeedTarget,
  data: unknown,
  options: SeedOptions = {},
): Promise<{ users: number; conversations: number }> {
  const { users, conversations } = await checkSeed(target.accounts.store, data).catch((error: unknown) => {
    const { source } = options;
    throw error instanceof SeedError && source !== undefined
      ? new SeedError(error.problems.map((problem) => `${source}: ${problem}`))
      : error;
  });
  const total = users.length + conversations.length;
  const started = performance.now();
  let written = 0;
  let reported = 0;
  const wrote = (count: number) => {
    written += count;
    if (options.onProgress && written - reported >= PROGRESS_EVERY && written < total) {
      reported = written - (written % PROGRESS_EVERY);
      options.onProgress({ written, total, perSecond: Math.round(written / ((performance.now() - started) / 1000)) });
    }
  };

  for (const batch of batches(users)) {
    await target.accounts.store.upsertUsers(
      batch.map((user) => ({ id: user.id, username: user.username, balanceMicros: pointsToMicros(user.quota) })),
    );
    await target.accounts.store.addApiKeys(
      batch.flatMap((user) => user.apiKeys.map((key) => ({ hash: hashApiKey(key), userId: user.id }))),
    );
    wrote(batch.length);
  }
  const highestIds = new Map<number, number>();
  for (const batch of batches(conversations)) {
    await target.conversations.store.upsertMany(batch);
    for (const { userId, id: conversationId } of batch) highestIds.set(userId, Math.max(highestIds.get(userId) ?? 0, conversationId));
    wrote(batch.length);
  }
  await target.accounts.store.reserveConversationIds(highestIds);
  return { users: users.length, conversations: conversations.length };
}

/** Reads a seed file as JSON; a file that cannot be read or parsed is a `SeedError` naming it. */
export async function readSeedFile(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new SeedError([`${file}: cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`]);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new SeedError([`${file}: not valid JSON: ${syntaxError((error as Error).message, text)}`]);
  }
}

/** The whole check, in the data and against the database; nothing is written. */
async function checkSeed(accounts: AccountStore, data: unknown): Promise<{ users: SeedUser[]; conversations: SeedConversation[] }> {
  const file = fileSchema.safeParse(data);
  if (!file.success) {
    const found = data === null ? 'null' : Array.isArray(data) ? 'an array' : typeof data;
    throw new SeedError(
      isRecord(data)
        ? file.error.issues.map(describeIssue(''))
        : [`(file): must be a JSON object with "users" and "conversations" arrays, not ${found}`],
    );
  }
  const problems: string[] = [];
  const users = validEntries(file.data.users, 'users', userSchema, problems);
  const conversations = validEntries(file.data.conversations, 'conversations', conversationSchema, problems);
  const keys = listedKeys(file.data);
  const listedUserIds = checkDuplicates(keys, problems);
  await checkAgainstDatabase(accounts, keys, listedUserIds, problems);
  if (problems.length > 0) {
    throw new SeedError([...problems, `${problems.length} problem${problems.length === 1 ? '' : 's'}; nothing was written`]);
  }
  return { users, conversations };
}

/**
 * The unique keys of the file's entries, where they are valid, even in entries with other
 * problems, so that every problem is told at once.
 */
function listedKeys(file: { users: unknown[]; conversations: unknown[] }) {
  return {
    users: file.users.map((entry, index) => ({
      at: `users[${index}]`,
      id: field(entry, 'id', accountRules.userId),
      username: field(entry, 'username', accountRules.username),
    })),
    apiKeys: file.users.flatMap((entry, index) => {
      const keys = field(entry, 'apiKeys', z.array(z.unknown()));
      const owner = field(entry, 'id', accountRules.userId);
      return (keys ?? []).flatMap((key, keyIndex) =>
        typeof key === 'string' && key.startsWith(API_KEY_PREFIX)
          ? [{ at: `users[${index}].apiKeys[${keyIndex}]`, key: hashApiKey(key), owner }]
          : [],
      );
    }),
    conversations: file.conversations.map((entry, index) => ({
      at: `conversations[${index}]`,
      userId: field(entry, 'userId', accountRules.userId),
      id: field(entry, 'id', conversationRules.number),
    })),
  };
}

/** Keys listed twice in the file go to `problems`; answers the user ids the file lists. */
function checkDuplicates(listed: ReturnType<typeof listedKeys>, problems: string[]): ReadonlyMap<number, string> {
  const listedUserIds = firstOccurrences(
    listed.users.filter((user) => user.id !== undefined).map((user) => ({ at: `${user.at}.id`, key: user.id! })),
    problems,
    (key) => `user ${key} is listed twice`,
  );
  firstOccurrences(
    listed.users.filter((user) => user.username !== undefined).map((user) => ({ at: `${user.at}.username`, key: user.username! })),
    problems,
    (key) => `"${key}" is listed twice`,
  );
  firstOccurrences(listed.apiKeys, problems, () => 'this key is listed twice');
  firstOccurrences(
    listed.conversations
      .filter((entry) => entry.userId !== undefined && entry.id !== undefined)
      .map((entry) => ({ at: entry.at, key: `${entry.id} of user ${entry.userId}` })),
    problems,
    (key) => `conversation ${key} is listed twice`,
  );
  return listedUserIds;
}

/** Against the database: conversations' owners, and the unique keys other users hold there. */
async function checkAgainstDatabase(
  accounts: AccountStore,
  listed: ReturnType<typeof listedKeys>,
  listedUserIds: ReadonlyMap<number, string>,
  problems: string[],
): Promise<void> {
  const ownersElsewhere = new Set(
    listed.conversations.flatMap((entry) => (entry.userId === undefined || listedUserIds.has(entry.userId) ? [] : [entry.userId])),
  );
  const [existingOwners, usernameOwners, keyOwners] = await Promise.all([
    accounts.existingUserIds([...ownersElsewhere]),
    accounts.userIdsByUsername(listed.users.flatMap((user) => (user.username === undefined ? [] : [user.username]))),
    accounts.apiKeyOwners(listed.apiKeys.map(({ key }) => key)),
  ]);
  for (const { at, userId } of listed.conversations) {
    if (userId !== undefined && !listedUserIds.has(userId) && !existingOwners.has(userId)) {
      problems.push(`${at}.userId: user ${userId} is neither in the file nor in the database`);
    }
  }
  for (const { at, id: userId, username } of listed.users) {
    const owner = username === undefined ? undefined : usernameOwners.get(username);
    if (owner !== undefined && owner !== userId) problems.push(`${at}.username: "${username}" belongs to user ${owner} in the database`);
  }
  for (const { at, key, owner: userId } of listed.apiKeys) {
    const owner = keyOwners.get(key);
    if (owner !== undefined && owner !== userId) problems.push(`${at}: this key belongs to user ${owner} in the database`);
  }
}

/** The entries that match `schema`; every other entry's problems go to `problems`. */
function validEntries<Output>(entries: unknown[], name: string, schema: z.ZodType<Output>, problems: string[]): Output[] {
  const valid: Output[] = [];
  entries.forEach((entry, index) => {
    const parsed = schema.safeParse(entry);
    if (parsed.success) valid.push(parsed.data);
    else problems.push(...parsed.error.issues.map(describeIssue(`${name}[${index}]`)));
  });
  return valid;
}

/** One field of an entry when it is valid on its own, whatever the rest of the entry holds. */
function field<Output>(entry: unknown, name: string, schema: z.ZodType<Output>): Output | undefined {
  if (typeof entry !== 'object' || entry === null) return undefined;
  const parsed = schema.safeParse((entry as Record<string, unknown>)[name]);
  return parsed.success ? parsed.data : undefined;
}

/** Records a problem for every entry whose key an earlier entry had; returns where each key first appears. */
function firstOccurrences<Key>(entries: { at: string; key: Key }[], problems: string[], message: (key: Key) => string): Map<Key, string> {
  const first = new Map<Key, string>();
  for (const { at, key } of entries) {
    const earlier = first.get(key);
    if (earlier === undefined) first.set(key, at);
    else problems.push(`${at}: ${message(key)} (also ${earlier})`);
  }
  return first;
}

/**
 * What is wrong with a text that JSON.parse refused, in one line: what was expected and where, as
 * a line and a column (counted from 1, in UTF-16 units as editors count them). JSON.parse's own
 * message names no position for some errors (an unexpected end, some unexpected tokens) and may
 * quote the text around it, newlines and all; jsonc-parser, in strict JSON mode, finds the first
 * error's offset for every one.
 */
function syntaxError(message: string, text: string): string {
  const errors: ParseError[] = [];
  parseTree(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  const first = errors[0];
  if (first === undefined) return message.replace(/\s*\n\s*/g, ' ');
  const before = text.slice(0, first.offset);
  const line = before.split('\n').length;
  const column = before.length - before.lastIndexOf('\n');
  const code = printParseErrorCode(first.error);
  const what = SYNTAX_ERRORS[code] ?? code;
  const atTheEnd = text.slice(first.offset).trim() === '';
  return `${atTheEnd ? `unexpected end of input: ${what}` : what} (line ${line}, column ${column})`;
}

/** jsonc-parser's error codes (by name: the enum is a `const enum`, which compiles to nothing here) in words. */
const SYNTAX_ERRORS: Record<string, string> = {
  InvalidSymbol: 'unexpected character',
  InvalidNumberFormat: 'not a number',
  PropertyNameExpected: 'expected a property name in double quotes',
  ValueExpected: 'expected a value',
  ColonExpected: "expected ':'",
  CommaExpected: "expected ','",
  CloseBraceExpected: "expected ',' or '}'",
  CloseBracketExpected: "expected ',' or ']'",
  EndOfFileExpected: 'expected the end of the file after the value',
  InvalidCommentToken: 'comments are not JSON',
  UnexpectedEndOfComment: 'comments are not JSON',
  UnexpectedEndOfString: 'a string not closed on its line',
  UnexpectedEndOfNumber: 'a number cut short',
  InvalidUnicode: 'a bad \\u escape',
  InvalidEscapeCharacter: 'a bad escape',
  InvalidCharacter: 'a control character inside a string (write it escaped)',
};

function* batches<T>(items: readonly T[]): Generator<T[]> {
  for (let at = 0; at < items.length; at += BATCH_SIZE) yield items.slice(at, at + BATCH_SIZE);
}
