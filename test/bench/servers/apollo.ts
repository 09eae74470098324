import { parseArgs } from 'node:util';

import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import DataLoader from 'dataloader';
import { GraphQLError } from 'graphql';
import mongoose from 'mongoose';

import { conversationModel, type ConversationRecord, type MessageRecord } from '../../../src/conversations/conversation.model.js';
import { bearerUser } from './legacy-bodies.js';

/**
 * Apollo Server 5 with its default options over a minimal schema for the same reads: what the
 * GraphQL side looks like when written the usual way — the standalone server, a JWT check in the
 * context, Mongoose `lean()` queries, and DataLoaders per request. The benchmark checks that its
 * answers to the gateway's own operations are byte-identical to the gateway's.
 *
 * node --import tsx test/bench/servers/apollo.ts --port N --uri MONGODB_URI --secret JWT_SECRET
 */
const { values } = parseArgs({ options: { port: { type: 'string' }, uri: { type: 'string' }, secret: { type: 'string' } } });
if (!values.port || !values.uri || !values.secret) throw new Error('usage: apollo.ts --port N --uri MONGODB_URI --secret JWT_SECRET');

const typeDefs = `#graphql
  type Query {
    conversations(first: Int = 100): ConversationConnection!
    conversation(number: Int!): Conversation
  }
  type ConversationConnection {
    nodes: [Conversation!]!
  }
  type Conversation {
    number: Int!
    userId: Int!
    name: String!
    messages: [Message!]!
    model: String!
    enableWeb: Boolean!
  }
  type Message {
    role: String!
    content: String!
  }
`;

interface Context {
  userId: number;
  byId: DataLoader<number, ConversationRecord | null>;
  messagesById: DataLoader<number, MessageRecord[]>;
}

const callerOf = bearerUser(values.secret);
const connection = await mongoose.createConnection(values.uri).asPromise();
const conversations = conversationModel(connection);
const SUMMARY = { _id: 0, id: 1, userId: 1, name: 1, model: 1, enableWeb: 1 };

const resolvers = {
  Query: {
    conversations: async (_: unknown, { first }: { first: number }, { userId }: Context) => ({
      nodes: await conversations
        .find({ userId }, SUMMARY)
        .sort({ id: -1 })
        .limit(Math.min(Math.max(first, 0), 100))
        .lean(),
    }),
    conversation: (_: unknown, { number }: { number: number }, { byId }: Context) => byId.load(number),
  },
  Conversation: {
    number: (conversation: ConversationRecord) => conversation.id,
    messages: (conversation: ConversationRecord, _: unknown, { messagesById }: Context) =>
      conversation.messages ?? messagesById.load(conversation.id),
  },
};

async function contextOf(authorization: string | undefined): Promise<Context> {
  const userId = await callerOf(authorization);
  if (userId === null) throw new GraphQLError('unauthorized', { extensions: { code: 'UNAUTHENTICATED', http: { status: 401 } } });
  const byIdOf = <T extends { id: number }>(rows: T[]) => new Map(rows.map((row) => [row.id, row]));
  return {
    userId,
    byId: new DataLoader(async (ids) => {
      const found = byIdOf(await conversations.find({ userId, id: { $in: ids } }, { ...SUMMARY, messages: 1 }).lean());
      return ids.map((id) => found.get(id) ?? null);
    }),
    messagesById: new DataLoader(async (ids) => {
      const found = byIdOf(await conversations.find({ userId, id: { $in: ids } }, { _id: 0, id: 1, messages: 1 }).lean());
      return ids.map((id) => found.get(id)?.messages ?? []);
    }),
  };
}

const server = new ApolloServer<Context>({ typeDefs, resolvers });
await startStandaloneServer(server, {
  listen: { port: Number(values.port), host: '127.0.0.1' },
  context: async ({ req }) => contextOf(req.headers.authorization),
});
process.stdout.write(`apollo listening on port ${values.port}\n`);
process.once('SIGTERM', () => {
  void server
    .stop()
    .then(() => connection.close())
    .then(() => process.exit(0));
});
