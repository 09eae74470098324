import { ApolloClient, gql, HttpLink, InMemoryCache, type TypedDocumentNode } from '@apollo/client';
import { relayStylePagination } from '@apollo/client/utilities';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startTestGateway, type TestGateway } from '../support/gateway.js';

interface SideBarData {
  conversations: {
    totalCount: number;
    edges: { cursor: string; node: { __typename: 'Conversation'; id: string; number: number; name: string } }[];
    pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
  };
}
type PageVariables = { first?: number; after?: string | null; last?: number; before?: string | null };

const SIDE_BAR: TypedDocumentNode<SideBarData, PageVariables> = gql`
  query SideBar($first: Int, $after: String, $last: Int, $before: String) {
    conversations(first: $first, after: $after, last: $last, before: $before) {
      totalCount
      edges {
        cursor
        node {
          id
          number
          name
        }
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

const DELETE: TypedDocumentNode<{ deleteConversation: { ok: boolean; deletedConversationId: string | null } }, { id: string }> = gql`
  mutation Delete($id: ID!) {
    deleteConversation(id: $id) {
      ok
      deletedConversationId
    }
  }
`;

let gateway: TestGateway;
let authorization: string;

beforeAll(async () => {
  gateway = await startTestGateway();
  await gateway.seed({
    users: [{ id: 1, username: 'alice', quota: 1 }],
    conversations: Array.from({ length: 10 }, (_, index) => ({
      userId: 1,
      id: index + 1,
      name: `Alice ${index + 1}`,
      model: 'gpt-4o',
      messages: [],
    })),
  });
  authorization = `Bearer ${await gateway.token(1)}`;
});

afterAll(() => gateway?.stop());

/** Apollo Client with its normalised cache, the connection merged by `relayStylePagination`. */
function apolloClient() {
  return new ApolloClient({
    link: new HttpLink({ uri: `${gateway.url}/graphql`, headers: { authorization } }),
    cache: new InMemoryCache({ typePolicies: { Query: { fields: { conversations: relayStylePagination() } } } }),
  });
}

const numbers = (data: SideBarData | null | undefined) => data?.conversations.edges.map((edge) => edge.node.number);

/** The side bar as a screen watches it: its first page, `fetchMore` for each further one, the list as the cache holds it. */
async function watchSideBar(client: ApolloClient, variables: PageVariables) {
  const query = client.watchQuery({ query: SIDE_BAR, variables });
  const watching = query.subscribe(() => {});
  await query.refetch();
  return {
    current: () => client.readQuery({ query: SIDE_BAR, variables }),
    fetchMore: (more: PageVariables) => query.fetchMore({ variables: more }),
    stop: () => watching.unsubscribe(),
  };
}

describe('Apollo Client 4 with relayStylePagination', () => {
  it('merges two pages forward into one list', async () => {
    const sideBar = await watchSideBar(apolloClient(), { first: 4 });
    expect(numbers(sideBar.current())).toEqual([10, 9, 8, 7]);
    await sideBar.fetchMore({ after: sideBar.current()!.conversations.pageInfo.endCursor });
    expect(numbers(sideBar.current())).toEqual([10, 9, 8, 7, 6, 5, 4, 3]);
    expect(sideBar.current()!.conversations.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
    sideBar.stop();
  });

  it('merges a page backward before the one it has', async () => {
    const sideBar = await watchSideBar(apolloClient(), { last: 3 });
    expect(numbers(sideBar.current())).toEqual([3, 2, 1]);
    await sideBar.fetchMore({ last: 3, before: sideBar.current()!.conversations.pageInfo.startCursor });
    expect(numbers(sideBar.current())).toEqual([6, 5, 4, 3, 2, 1]);
    expect(sideBar.current()!.conversations.pageInfo).toMatchObject({ hasPreviousPage: true });
    sideBar.stop();
  });

  it('evicts a deleted conversation by the id its payload names, and the list no longer shows it', async () => {
    const client = apolloClient();
    const page = await client.query({ query: SIDE_BAR, variables: { first: 4 } });
    const nine = page.data!.conversations.edges[1]!.node;
    const result = await client.mutate({
      mutation: DELETE,
      variables: { id: nine.id },
      // Only the payload: nothing closes over the mutation's variables.
      update(cache, { data }) {
        const deleted = data?.deleteConversation.deletedConversationId;
        if (deleted) cache.evict({ id: cache.identify({ __typename: 'Conversation', id: deleted }) });
        cache.gc();
      },
    });
    expect(result.data!.deleteConversation).toEqual({ __typename: 'DeleteConversationPayload', ok: true, deletedConversationId: nine.id });
    expect((client.cache.extract() as Record<string, unknown>)[`Conversation:${nine.id}`]).toBeUndefined();
    expect(numbers(client.readQuery({ query: SIDE_BAR, variables: { first: 4 } }))).toEqual([10, 8, 7]);
  });
});
