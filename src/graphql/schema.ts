import { readdirSync, readFileSync } from 'node:fs';
import { makeExecutableSchema } from '@graphql-tools/schema';
import type { GraphQLSchema } from 'graphql';
import { billingResolvers } from '../billing/billing.resolvers.js';
import { conversationResolvers } from '../conversations/conversation.resolvers.js';

/** `schema/` at the project root, the same relative path from `src/graphql` and `dist/graphql`. */
export const SCHEMA_DIRECTORY = new URL('../../schema/', import.meta.url);

function readTypeDefs(): string[] {
  return readdirSync(SCHEMA_DIRECTORY)
    .filter((file) => file.endsWith('.graphql'))
    .sort()
    .map((file) => readFileSync(new URL(file, SCHEMA_DIRECTORY), 'utf8'));
}

export function buildSchema(): GraphQLSchema {
  return makeExecutableSchema({
    typeDefs: readTypeDefs(),
    resolvers: [conversationResolvers, billingResolvers],
  });
}
