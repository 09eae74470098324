import { graphql } from 'relay-runtime';

/**
 * The side bar opened at a conversation (a link to it): ten older conversations at a time, and
 * the newer ones above it with loadPrevious. Its count argument has a default, which relay-runtime
 * puts in place of the null it gives `first` when paging back: it sends `first` and `last` together.
 */
export const conversationHistory = graphql`
  fragment ConversationHistory_query on Query
  @argumentDefinitions(
    first: { type: "Int", defaultValue: 10 }
    after: { type: "String" }
    last: { type: "Int" }
    before: { type: "String" }
  )
  @refetchable(queryName: "ConversationHistoryPaginationQuery") {
    conversations(first: $first, after: $after, last: $last, before: $before) @connection(key: "ConversationHistory_conversations") {
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
