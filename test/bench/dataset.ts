import type { UserRecord } from '../../src/accounts/user.model.js';
import type { ConversationRecord, MessageRecord } from '../../src/conversations/conversation.model.js';
import { seededRandom } from '../support/random.js';

/**
 * A deterministic, realistic data set: users with a skewed number of
 * conversations each, conversations with human-looking names and a few
 * messages of chat-like length. Documents have the shape the Mongoose models
 * store (timestamps included), so the gateway reads them as its own.
 */

export interface DatasetSize {
  users: number;
  conversations: number;
}

export const FULL_DATASET: DatasetSize = { users: 10_000, conversations: 1_000_000 };
export const QUICK_DATASET: DatasetSize = { users: 1_000, conversations: 100_000 };

/** The user every measured request is made as. */
export const BENCH_USER_ID = 1;
/** More than a page, so the list always answers 100 conversations. */
const BENCH_USER_CONVERSATIONS = 200;
/** The conversation the load scenarios read: it has exactly 20 messages. */
export const KNOWN_CONVERSATION_ID = 150;
const KNOWN_CONVERSATION_MESSAGES = 20;

export type UserDocument = UserRecord & { createdAt: Date; updatedAt: Date };
export type ConversationDocument = Required<ConversationRecord> & { createdAt: Date; updatedAt: Date };

const pick = <T>(next: () => number, items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
const between = (next: () => number, low: number, high: number): number => low + Math.floor(next() * (high - low + 1));

/**
 * Conversations per user (index 0 is user 1): the benchmark user has a fixed
 * number, the others a log-normal share of the rest, as real usage is skewed.
 */
export function conversationCounts(size: DatasetSize): number[] {
  const next = seededRandom(7);
  const weights = Array.from({ length: size.users - 1 }, () => {
    const gaussian = Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
    return Math.exp(gaussian);
  });
  const rest = size.conversations - BENCH_USER_CONVERSATIONS;
  const total = weights.reduce((sum, weight) => sum + weight, 0);
  const counts = weights.map((weight) => Math.floor((weight / total) * rest));
  let missing = rest - counts.reduce((sum, count) => sum + count, 0);
  for (let index = 0; missing > 0; index = (index + 1) % counts.length, missing--) counts[index]!++;
  return [BENCH_USER_CONVERSATIONS, ...counts];
}

const FIRST_NAMES = [
  'alice',
  'bruno',
  'chen',
  'dana',
  'emre',
  'fatima',
  'gustav',
  'hana',
  'ivan',
  'jules',
  'kofi',
  'lena',
  'mateo',
  'noor',
  'olga',
  'priya',
];
const LAST_NAMES = [
  'schmidt',
  'silva',
  'wang',
  'kowalski',
  'yilmaz',
  'haddad',
  'berg',
  'sato',
  'petrov',
  'martin',
  'mensah',
  'novak',
  'garcia',
  'khan',
  'ivanova',
  'patel',
];
const MODELS = ['gpt-4o', 'gpt-4o-mini', 'gpt-4.1', 'gpt-3.5-turbo', 'o3-mini'];
const PLACES = ['Lisbon', 'Zürich', 'São Paulo', 'Kraków', 'Kyoto', 'Reykjavík', 'Marrakesh', 'Oaxaca', 'Tallinn', 'Hanoi'];
const TOPICS = [
  'a flaky CI test',
  'React hooks',
  'a SQL join',
  'Rust lifetimes',
  'a cover letter',
  'my landlord',
  'sourdough bread',
  'Kubernetes probes',
  'a birthday speech',
  'tax forms',
  'a Python regex',
  'the quarterly report',
  'marathon training',
  'a Go channel deadlock',
  'TypeScript generics',
  'a job interview',
  'a wedding toast',
  'CSS grid layout',
];
const TITLES: readonly ((next: () => number) => string)[] = [
  (next) => `Trip plan: ${pick(next, PLACES)}`,
  (next) => `Help with ${pick(next, TOPICS)}`,
  (next) => `Questions about ${pick(next, TOPICS)}`,
  (next) => `Email about ${pick(next, TOPICS)}`,
  (next) => `Debugging ${pick(next, TOPICS)}`,
  (next) => `${between(next, 3, 10)} days in ${pick(next, PLACES)}`,
  (next) => `Summary — ${pick(next, TOPICS)}`,
  () => 'New chat',
];
const WORDS = (
  'the a to of and in that it is for on with as this be at by from or an can will your we my how what about ' +
  'please could you explain why does when should would make use code error function value test plan day time ' +
  'first then after before change update check run build deploy write read file line step result example better ' +
  'simple quick detailed version problem idea list table date budget train hotel museum café naïve résumé 数据 🙂'
).split(' ');

function sentence(next: () => number, minWords: number, maxWords: number): string {
  const count = between(next, minWords, maxWords);
  const words: string[] = [];
  for (let index = 0; index < count; index++) words.push(pick(next, WORDS));
  const text = words.join(' ');
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}${next() < 0.8 ? '.' : '?'}`;
}

function paragraph(next: () => number, sentences: number): string {
  const parts: string[] = [];
  for (let index = 0; index < sentences; index++) parts.push(sentence(next, 5, 16));
  return parts.join(' ');
}

/** A system prompt (sometimes), then alternating user and assistant turns. */
function messages(next: () => number, count: number): MessageRecord[] {
  const out: MessageRecord[] = [];
  if (count > 1 && next() < 0.3) out.push({ role: 'system', content: 'You are a helpful assistant. Answer concisely.' });
  while (out.length < count) {
    const user = out.length === 0 || out[out.length - 1]!.role !== 'user';
    out.push(
      user
        ? { role: 'user', content: paragraph(next, between(next, 1, 3)) }
        : { role: 'assistant', content: paragraph(next, between(next, 2, 8)) },
    );
  }
  return out;
}

const EPOCH = Date.UTC(2024, 0, 1);
const HOUR = 3_600_000;

export function userDocument(userId: number, conversations: number): UserDocument {
  const next = seededRandom(userId * 7919);
  const createdAt = new Date(EPOCH + userId * HOUR);
  return {
    id: userId,
    username: `${pick(next, FIRST_NAMES)}.${pick(next, LAST_NAMES)}${userId}`,
    balanceMicros: between(next, 0, 5_000) * 10_000,
    lastConversationId: conversations,
    createdAt,
    updatedAt: createdAt,
  };
}

/**
 * Conversation `id` of user `userId`: 1 to 4 messages (the known conversation 20), or exactly
 * `messageCount` when given (the scale scenarios' long conversations).
 */
export function conversationDocument(userId: number, id: number, messageCount?: number): ConversationDocument {
  const next = seededRandom(userId * 1_000_003 + id);
  const known = userId === BENCH_USER_ID && id === KNOWN_CONVERSATION_ID;
  const createdAt = new Date(EPOCH + userId * HOUR + id * 60_000);
  return {
    userId,
    id,
    name: known ? 'Trip plan: Lisbon and Sintra' : pick(next, TITLES)(next),
    model: pick(next, MODELS),
    enableWeb: next() < 0.2,
    messages: messages(next, messageCount ?? (known ? KNOWN_CONVERSATION_MESSAGES : between(next, 1, 4))),
    createdAt,
    updatedAt: createdAt,
  };
}

/** The conversations of users `[firstUser, endUser)`, in batches of about `batchSize`. */
export function* conversationBatches(
  counts: readonly number[],
  firstUser: number,
  endUser: number,
  batchSize: number,
): Generator<ConversationDocument[]> {
  let batch: ConversationDocument[] = [];
  for (let userId = firstUser; userId < endUser; userId++) {
    const count = counts[userId - 1]!;
    for (let id = 1; id <= count; id++) {
      batch.push(conversationDocument(userId, id));
      if (batch.length >= batchSize) {
        yield batch;
        batch = [];
      }
    }
  }
  if (batch.length > 0) yield batch;
}
