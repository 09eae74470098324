import { readdirSync, readFileSync } from 'node:fs';

import { buildSubgraphSchema } from '@apollo/subgraph';
import { mergeResolvers } from '@graphql-tools/merge';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { type GraphQLSchema, parse } from 'graphql';

import { FEDERATION_TYPE_DEFS, federationResolvers } from './federation.js';
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

type SubgraphResolvers = Extract<Parameters<typeof buildSubgraphSchema>[0], { resolvers?: unknown }>['resolvers'];

export interface SchemaOptions {
  /** An Apollo Federation 2 subgraph (`FEDERATION_SUBGRAPH`): the same types and resolvers, with `_service`, `_entities` and `Conversation @key`. */
  federation?: boolean;
}

/**
 * The SDL in `schema/` with the root's own resolvers (`Node`) and each domain's; without the
 * domains' resolvers, for validating documents only.
 */
export function buildSchema(resolvers: Resolvers[] = [], options: SchemaOptions = {}): GraphQLSchema {
  const typeDefs = readTypeDefs();
  if (options.federation !== true) return makeExecutableSchema({ typeDefs, resolvers: [nodeResolvers, ...resolvers] });
  return buildSubgraphSchema({
    typeDefs: [...typeDefs.map((text) => parse(text)), FEDERATION_TYPE_DEFS],
    // The same resolver map, typed by graphql-tools and by @apollo/subgraph each in its own way.
    resolvers: mergeResolvers([nodeResolvers, ...resolvers, federationResolvers]) as SubgraphResolvers,
  });
}
