import { parse } from 'graphql';

import type { RequestContext } from '../context.js';
import { fromGlobalId } from './global-id.js';

/**
 * What an Apollo Federation 2 subgraph adds to the SDL in `schema/`: the federation spec linked
 * (only `@key`), and `Conversation` as an entity keyed by its global id. Kept here, not in
 * `schema/`, so that the schema without federation, and the types generated from `schema/`,
 * hold nothing of it.
 */
export const FEDERATION_TYPE_DEFS = parse(`
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key"])

  extend type Conversation @key(fields: "id")
`);

/** A representation a router sends `_entities`: the entity's key fields, as this subgraph gave them. */
interface ConversationReference {
  id?: unknown;
}

/**
 * `_entities` resolves a conversation as `Query.node` does: through the caller's own service and
 * its loader, so every representation of one request is read in one batch, and an id that names
 * nothing, or someone else's conversation, is null.
 */
export const federationResolvers = {
  Conversation: {
    __resolveReference: ({ id }: ConversationReference, context: RequestContext) => {
      const key = typeof id === 'string' ? fromGlobalId(id) : null;
      return key?.type === 'Conversation' ? context.conversations.find(key) : null;
    },
  },
};
