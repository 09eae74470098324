import { MongoClient } from 'mongodb';
import { expect } from 'vitest';

import { graphql, type TestGateway } from '../support/gateway.js';
import { runNode } from '../support/node-process.js';
import {
  API_KEYS,
  balanceText,
  conversationsOn,
  type Engine,
  type LegacyConversation,
  type LegacyUser,
  microsOf,
  type TableLine,
  usersOn,
} from './chat-nio-database.js';

/** `npm run import` as its built script, to its end, with exactly MONGODB_URI (when given) and PATH. */
export function runImport(from: string, mongodbUri: string | undefined, args: string[] = []) {
  return runNode('dist/cli/import.js', ['--from', from, ...args], mongodbUri === undefined ? {} : { MONGODB_URI: mongodbUri });
}

/** The problems report: each row left out, as `table key: reason`. */
export function problemsOf(stderr: string): string[] {
  return stderr
    .split('\n')
    .filter((line) => line.startsWith('import: left out: '))
    .map((line) => line.slice('import: left out: '.length));
}

/** The closing summary read back: per table its counts, and the balance sums in micro-points. */
export function summaryOf(stdout: string) {
  const tables: Record<string, TableLine> = {};
  for (const line of stdout.split('\n')) {
    const cells = /^(auth|quota|apikey|package|conversation)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$/.exec(line);
    if (cells !== null) tables[cells[1]!] = { read: +cells[2]!, written: +cells[3]!, there: +cells[4]!, leftOut: +cells[5]! };
  }
  const sums = /^balances in points: read (\S+), (?:written|would write) (\S+), left out (\S+)$/m.exec(stdout);
  expect(sums, stdout).not.toBeNull();
  return { tables, balances: { read: microsOf(sums![1]!), written: microsOf(sums![2]!), leftOut: microsOf(sums![3]!) } };
}

/** Everything the import writes, every field, to show that a run changed nothing. */
export async function snapshot(uri: string): Promise<Record<string, unknown[]>> {
  const client = await MongoClient.connect(uri);
  try {
    const db = client.db();
    const all = (name: string) => db.collection(name).find({}).sort({ _id: 1 }).toArray();
    return {
      users: await all('users'),
      apiKeys: await all('apiKeys'),
      giftGrants: await all('giftGrants'),
      conversations: await all('conversations'),
    };
  } finally {
    await client.close();
  }
}

/** A `DECIMAL` text as a JSON number prints it: '12.500000' → '12.5', '-0.250000' → '-0.25'. */
export function pointsText(decimal: string): string {
  return decimal.includes('.') ? decimal.replace(/0+$/, '').replace(/\.$/, '') : decimal;
}

/** The messages Chat Nio's `data` holds, as the legacy endpoints show them: role and content only. */
function messagesOf(conversation: LegacyConversation): { role: string; content: string }[] {
  const messages = (conversation.data === null ? null : JSON.parse(conversation.data)) as { role: string; content: string }[] | null;
  return (messages ?? []).map(({ role, content }) => ({ role, content }));
}

function listBody(conversations: LegacyConversation[]): string {
  const items = conversations.map(({ id, userId, name, model }) => ({
    id,
    user_id: userId,
    name,
    message: null,
    model,
    enable_web: false,
  }));
  return JSON.stringify({ status: true, message: '', data: items });
}

function loadBody(conversation: LegacyConversation): string {
  const { id, userId, name, model } = conversation;
  const data = { id, user_id: userId, name, message: messagesOf(conversation), model, enable_web: false };
  return JSON.stringify({ status: true, message: 'success', data });
}

/**
 * Asks the legacy endpoints, as a legacy client would after the move, what Chat Nio's own data
 * says: each user's balance to the last decimal (with a token, and with the user's API key), the
 * conversation list newest first, each conversation with its messages, "conversation not found"
 * for each one left out; and the total count of each user's conversations over GraphQL.
 */
export async function expectAsChatNioHasIt(gateway: TestGateway, engine: Engine): Promise<void> {
  const get = async (path: string, authorization: string) => (await fetch(`${gateway.url}${path}`, { headers: { authorization } })).text();
  const across = usersOn(engine).filter((user) => user.leftOut === undefined);
  for (const user of across) {
    const token = await gateway.token(user.id);
    const quotaBody = `{"status":true,"quota":${pointsText(balanceText(user, engine))}}`;
    expect(await get('/quota', token), `the balance of ${user.username}`).toBe(quotaBody);
    for (const { key } of API_KEYS.filter((key) => key.userId === user.id && key.leftOut === undefined)) {
      expect(await get('/quota', key), `the balance of ${user.username} asked with the API key`).toBe(quotaBody);
    }
    const owned = conversationsOn(engine).filter((conversation) => conversation.userId === user.id);
    const kept = owned.filter((conversation) => conversation.leftOut === undefined).sort((a, b) => b.id - a.id);
    expect(await get('/conversation/list', token), `the conversations of ${user.username}`).toBe(listBody(kept.slice(0, 100)));
    // Every conversation of a few, and every hundredth of the user with thousands.
    for (const conversation of kept.filter((_conversation, index) => kept.length < 100 || index % 100 === 0 || index === kept.length - 1)) {
      expect(await get(`/conversation/load?id=${conversation.id}`, token)).toBe(loadBody(conversation));
    }
    for (const conversation of owned.filter((conversation) => conversation.leftOut !== undefined && conversation.id > 0)) {
      expect(await get(`/conversation/load?id=${conversation.id}`, token)).toBe('{"status":false,"message":"conversation not found"}');
    }
    const { body } = await graphql(gateway, '{ conversations { totalCount } }', { authorization: token });
    expect(body.data, `how many conversations ${user.username} has`).toEqual({ conversations: { totalCount: kept.length } });
  }
  expect(await sequences(gateway, across)).toEqual(new Map(across.map((user) => [user.id, highestNumber(engine, user)])));
}

/** Each user's conversation-number sequence, as stored. */
async function sequences(gateway: TestGateway, users: LegacyUser[]): Promise<Map<number, number>> {
  const stored = await gateway.models.users
    .find({ id: { $in: users.map((user) => user.id) } }, { _id: 0, id: 1, lastConversationId: 1 })
    .lean();
  return new Map(stored.map((user) => [user.id, user.lastConversationId]));
}

/** The highest number Chat Nio gave a conversation of this user, left out or not: none is given again. */
function highestNumber(engine: Engine, user: LegacyUser): number {
  const numbers = conversationsOn(engine)
    .filter((conversation) => conversation.userId === user.id && conversation.id > 0)
    .map((conversation) => conversation.id);
  return Math.max(0, ...numbers);
}
