import { isDeepStrictEqual } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { graphql, startTestGateway, type TestGateway } from '../support/gateway.js';

const ALICE = 1;
/** Alice's conversations, newest (highest number) first: the connection's whole list. */
const ALL = Array.from({ length: 12 }, (_, index) => 12 - index);

let gateway: TestGateway;
let authorization: string;
/** Each conversation's cursor, as the connection gave it. */
const cursorOf = new Map<number, string>();

beforeAll(async () => {
  gateway = await startTestGateway();
  await gateway.seed({
    users: [{ id: ALICE, username: 'alice', quota: 1 }],
    conversations: ALL.map((number) => ({ userId: ALICE, id: number, name: `Alice ${number}`, model: 'gpt-4o', messages: [] })),
  });
  authorization = `Bearer ${await gateway.token(ALICE)}`;
  const { body } = await graphql(gateway, '{ conversations { edges { cursor node { number } } } }', { authorization });
  for (const edge of body.data.conversations.edges) cursorOf.set(edge.node.number, edge.cursor);
});

afterAll(() => gateway?.stop());

/** A request's arguments, the cursors named by the conversation they point at. */
interface Arguments {
  first?: number;
  last?: number;
  after?: number;
  before?: number;
}

interface Answer {
  numbers: number[];
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
}

/** ApplyCursorsToEdges, as the specification writes it. */
function applyCursorsToEdges(allEdges: number[], before: number | undefined, after: number | undefined): number[] {
  let edges = allEdges;
  if (after !== undefined) {
    const afterEdge = edges.indexOf(after);
    if (afterEdge !== -1) edges = edges.slice(afterEdge + 1);
  }
  if (before !== undefined) {
    const beforeEdge = edges.indexOf(before);
    if (beforeEdge !== -1) edges = edges.slice(0, beforeEdge);
  }
  return edges;
}

/**
 * The answer the Relay Cursor Connections specification defines (EdgesToReturn, HasPreviousPage,
 * HasNextPage) over the whole list, with the gateway's choices where the specification leaves one:
 * `first` is 100 when no count is given, and the flag on the side not paged towards is true when
 * an edge lies beyond the cursor on that side (the edge the cursor names counts).
 */
function specified(allEdges: number[], { first, last, after, before }: Arguments): Answer {
  if (first === undefined && last === undefined) first = 100;
  const range = applyCursorsToEdges(allEdges, before, after);
  let edges = range;
  if (first !== undefined && edges.length > first) edges = edges.slice(0, first);
  if (last !== undefined && edges.length > last) edges = edges.slice(edges.length - last);
  const beyond = (cursor: number | undefined) => cursor !== undefined && allEdges.includes(cursor);
  return {
    numbers: edges,
    pageInfo: {
      hasPreviousPage: last !== undefined ? range.length > last : beyond(after),
      hasNextPage: first !== undefined ? range.length > first : beyond(before),
      startCursor: edges.length === 0 ? null : cursorOf.get(edges[0]!)!,
      endCursor: edges.length === 0 ? null : cursorOf.get(edges[edges.length - 1]!)!,
    },
  };
}

const PAGE = /* GraphQL */ `
  query Page($first: Int, $after: String, $last: Int, $before: String) {
    conversations(first: $first, after: $after, last: $last, before: $before) {
      nodes {
        number
      }
      pageInfo {
        hasNextPage
        hasPreviousPage
        startCursor
        endCursor
      }
    }
  }
`;

async function answered({ first, last, after, before }: Arguments): Promise<Answer | { errors: unknown }> {
  const variables = { first, last, after: after && cursorOf.get(after), before: before && cursorOf.get(before) };
  const { body } = await graphql(gateway, PAGE, { authorization, variables });
  if (body.errors !== undefined) return { errors: body.errors.map((error) => error.message) };
  const { nodes, pageInfo } = body.data.conversations;
  return { numbers: nodes.map((node: { number: number }) => node.number), pageInfo };
}

/** Every combination of the values given for each argument. */
function combinations(values: { [K in keyof Arguments]: (number | undefined)[] }): Arguments[] {
  return Object.entries(values).reduce<Arguments[]>(
    (cases, [name, options]) => cases.flatMap((partial) => options.map((value) => ({ ...partial, [name]: value }))),
    [{}],
  );
}

describe('Query.conversations, as the Relay Cursor Connections specification defines it', () => {
  it('answers every combination of first, last, after and before as the specification’s algorithm does', async () => {
    const cases = combinations({
      first: [undefined, 0, 2, 5, 12],
      last: [undefined, 0, 2, 5, 12],
      // 12 is the newest, 1 the oldest; some pairs cross (`before` not inside what `after` leaves).
      after: [undefined, 12, 8, 3],
      before: [undefined, 10, 5, 1],
    });
    const differences: unknown[] = [];
    // A few requests at a time: 400 cases, over real HTTP.
    for (let start = 0; start < cases.length; start += 8) {
      await Promise.all(
        cases.slice(start, start + 8).map(async (args) => {
          const [actual, expected] = [await answered(args), specified(ALL, args)];
          if (!isDeepStrictEqual(actual, expected)) differences.push({ args, actual, expected });
        }),
      );
    }
    expect(differences).toEqual([]);
  });

  it('answers first and last together for relay-runtime’s loadPrevious: the range before `before`, its first `first`, then its last `last`', async () => {
    // What usePaginationFragment sends when its count argument has a default of 10.
    expect(await answered({ first: 10, last: 2, before: 8 })).toEqual(specified(ALL, { first: 10, last: 2, before: 8 }));
    expect(await answered({ first: 10, last: 2, before: 8 })).toMatchObject({
      numbers: [10, 9],
      pageInfo: { hasPreviousPage: true, hasNextPage: false },
    });
    // More than `first` before the cursor: the specification's first 10 of the range come first.
    expect(await answered({ first: 3, last: 2, before: 1 })).toMatchObject({
      numbers: [11, 10],
      pageInfo: { hasPreviousPage: true, hasNextPage: true },
    });
  });
});
