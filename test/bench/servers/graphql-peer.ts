import { parseArgs } from 'node:util';

import { makeExecutableSchema } from '@graphql-tools/schema';
import DataLoader from 'dataloader';
import type { GraphQLSchema } from 'graphql';
import mongoose from 'mongoose';

import {
  type ConversationModel,
  conversationModel,
  type ConversationRecord,
  type MessageRecord,
} from '../../../src/conversations/conversation.model.js';
import { bearerUser } from './legacy-bodies.js';

/**
 * What the GraphQL peers (Apollo Server, Mercurius, GraphQL Yoga) share, written once: the
 * command line, a minimal schema for the gateway's two reads, its resolvers over Mongoose
 * `lean()` queries, DataLoaders per request and the JWT check. Each server only wires these into
 * its own framework, so that what differs between them is the framework.
 *
 * node --import tsx test/bench/servers/NAME.ts --port N --uri MONGODB_URI --secret JWT_SECRET
 */

const typeDefs = /* GraphQL */ `
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

/** The context of one request: the caller, and that request's DataLoaders. */
export interface PeerContext {
  userId: number;
  byId: DataLoader<number, ConversationRecord | null>;
  messagesById: DataLoader<number, MessageRecord[]>;
}

/** One GraphQL peer's shared parts, connected to its database. */
export interface GraphqlPeer {
  port: number;
  schema: GraphQLSchema;
  /** The context of a request with this `Authorization` header, or null when it names no valid caller. */
  contextOf(authorization: string | undefined): Promise<PeerContext | null>;
  /** Closes the database connection. */
  close(): Promise<void>;
}

const SUMMARY = { _id: 0, id: 1, userId: 1, name: 1, model: 1, enableWeb: 1 };

/** Reads the command line of the peer `name` and connects to its database. */
export async function graphqlPeer(name: string): Promise<GraphqlPeer> {
  const { values } = parseArgs({ options: { port: { type: 'string' }, uri: { type: 'string' }, secret: { type: 'string' } } });
  if (!values.port || !values.uri || !values.secret) throw new Error(`usage: ${name}.ts --port N --uri MONGODB_URI --secret JWT_SECRET`);
  const connection = await mongoose.createConnection(values.uri).asPromise();
  const conversations = conversationModel(connection);
  const callerOf = bearerUser(values.secret);
  return {
    port: Number(values.port),
    schema: makeExecutableSchema({ typeDefs, resolvers: resolversOf(conversations) }),
    contextOf: async (authorization) => {
      const userId = await callerOf(authorization);
      return userId === null ? null : contextFor(conversations, userId);
    },
    close: () => connection.close(),
  };
}

function resolversOf(conversations: ConversationModel) {
  return {
    Query: {
      conversations: async (_: unknown, { first }: { first: number }, { userId }: PeerContext) => ({
        nodes: await conversations
          .find({ userId }, SUMMARY)
          .sort({ id: -1 })
          .limit(Math.min(Math.max(first, 0), 100))
          .lean(),
      }),
      conversation: (_: unknown, { number }: { number: number }, { byId }: PeerContext) => byId.load(number),
    },
    Conversation: {
      number: (conversation: ConversationRecord) => conversation.id,
      messages: (conversation: ConversationRecord, _: unknown, { messagesById }: PeerContext) =>
        conversation.messages ?? messagesById.load(conversation.id),
    },
  };
}

function contextFor(conversations: ConversationModel, userId: number): PeerContext {
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

/** Tells the benchmark the peer is up, and stops it (server, then database connection) on SIGTERM. */
export function announce(name: string, peer: GraphqlPeer, stopServer: () => Promise<unknown>): void {
  process.stdout.write(`${name} listening on port ${peer.port}\n`);
  process.once('SIGTERM', () => {
    void stopServer()
      .then(() => peer.close())
      .then(() => process.exit(0));
  });
}

/**
 * Apollo Server ends every JSON answer with a newline, and so does the gateway: the other peers
 * add it, so that their answers can be checked byte for byte against the gateway's.
 */
export const withNewline = (body: string): string => `${body}\n`;
