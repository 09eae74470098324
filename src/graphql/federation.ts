import { GraphQLError, parse, valueFromASTUntyped, type ValueNode } from 'graphql';

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
  __typename: 'Conversation';
  id: string;
}

/**
 * `_Any`, the type of `_entities`' representations, as this subgraph reads them: `Conversation` is
 * its only entity, so anything but a conversation's representation is bad input, refused before
 * anything runs (rather than an internal error from deep inside `_entities`).
 */
function representation(value: unknown): ConversationReference {
  const reference = value as Partial<ConversationReference> | null;
  if (typeof reference === 'object' && reference?.__typename === 'Conversation' && typeof reference.id === 'string') {
    return reference as ConversationReference;
  }
  throw new GraphQLError(
    'a representation must be {"__typename": "Conversation", "id": <a conversation\'s id>}, the only entity of this subgraph',
  );
}

/**
 * `_entities` resolves a conversation as `Query.node` does: through the caller's own service and
 * its loader, so every representation of one request is read in one batch, and an id that names
 * nothing, or someone else's conversation, is null.
 */
export const federationResolvers = {
  _Any: {
    parseValue: representation,
    parseLiteral: (node: ValueNode, variables?: Parameters<typeof valueFromASTUntyped>[1]) =>
      representation(valueFromASTUntyped(node, variables)),
  },
  Conversation: {
    __resolveReference: ({ id }: ConversationReference, context: RequestContext) => {
      const key = fromGlobalId(id);
      return key?.type === 'Conversation' ? context.conversations.find(key) : null;
    },
  },
};
