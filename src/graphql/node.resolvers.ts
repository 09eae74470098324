import type { RequestContext } from '../context.js';
import { badUserInput } from '../errors.js';
import { MAX_PAGE_SIZE } from '../limits.js';
import type { Resolvers, ResolversInterfaceTypes } from './generated/resolvers.js';
import { fromGlobalId } from './global-id.js';

type NodeValue = ResolversInterfaceTypes<Resolvers>['Node'];

/**
 * Relay's Global Object Identification: `Query.node` and `Query.nodes` hand each global id to the
 * service of the domain that owns its type, whose loaders batch every id of one request into one
 * read per domain. An id that names nothing, or nothing of the caller's, resolves to null; `nodes`
 * refuses an id given twice.
 */
export const nodeResolvers: Resolvers = {
  Query: {
    node: (_, { id }, context) => nodeOf(id, context),
    nodes: (_, { ids }, context) => {
      if (ids.length > MAX_PAGE_SIZE) throw badUserInput(`\`ids\` may hold at most ${MAX_PAGE_SIZE} ids`);
      // A repeated id would only repeat its object in the answer, as many times as it is given.
      const repeat = firstRepeat(ids);
      if (repeat !== undefined) {
        throw badUserInput(`\`ids\` holds the same id more than once (positions ${repeat.first} and ${repeat.again}): give each id once`);
      }
      // Every id is asked for before any is awaited, so each domain's loader reads them in one batch.
      return Promise.all(ids.map((id) => nodeOf(id, context)));
    },
  },
  Node: {
    // Conversations are the only nodes so far; a second type would tell its values apart here.
    __resolveType: () => 'Conversation',
  },
};

function nodeOf(id: string, context: RequestContext): Promise<NodeValue | null> | NodeValue | null {
  const key = fromGlobalId(id);
  switch (key?.type) {
    case 'Conversation':
      return context.conversations.find(key);
    default:
      return null;
  }
}

/** The positions of the first id given a second time, if any. Ids are compared as given: each object has one spelling of its id. */
function firstRepeat(ids: readonly string[]): { first: number; again: number } | undefined {
  const seen = new Map<string, number>();
  for (const [again, id] of ids.entries()) {
    const first = seen.get(id);
    if (first !== undefined) return { first, again };
    seen.set(id, again);
  }
  return undefined;
}
