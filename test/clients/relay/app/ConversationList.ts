import { graphql } from 'relay-runtime';

/** The side bar: the caller's conversations, paged both ways, each shown by ConversationItem. */
export const conversationList = graphql`
  fragment ConversationList_query on Query
  @argumentDefinitions(first: { type: "Int" }, after: { type: "String" }, last: { type: "Int" }, before: { type: "String" })
  @refetchable(queryName: "ConversationListPaginationQuery") {
    conversations(first: $first, after: $after, last: $last, before: $before) @connection(key: "ConversationList_conversations") {
      __id
      totalCount
      pageInfo {
        hasNextPage
        hasPreviousPage
        startCursor
        endCursor
      }
      edges {
        node {
          id
          number
          ...ConversationItem_conversation
        }
      }
    }
  }
`;
