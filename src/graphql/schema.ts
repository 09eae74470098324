import { readdirSync, readFileSync } from 'node:fs';

import { makeExecutableSchema } from '@graphql-tools/schema';
import type { GraphQLSchema } from 'graphql';

import type { Resolvers } from './generated/resolvers.js';
import { nodeResolvers } from './node.resolvers.js';

/** `schema/` at the project root, the same relative path from `src/graphql` and `dist/graphql`. */
const SCHEMA_DIRECTORY = new URL('../../schema/', import.meta.url);

function readTypeDefs(): string[] {
  return readdirSync(SCHEMA_DIRECTORY)
    .filter((file) => file.endsWith('.graphql'))
    .sort()
    .map((file) => readFileSync(new URL(file, SCHEMA_DIRECTORY), 'utf8'));
}

/**
 * The SDL in `schema/` with the root's own resolvers (`Node`) and each domain's; without the
 * domains' resolvers, for validating documents only.
 */
export function buildSchema(resolvers: Resolvers[] = []): GraphQLSchema {
  return makeExecutableSchema({ typeDefs: readTypeDefs(), resolvers: [nodeResolvers, ...resolvers] });
}
