import { graphql } from 'relay-runtime';

/** The screen's query: the side bar's page of conversations, wherever it starts. */
export const appQuery = graphql`
  query AppQuery($first: Int, $after: String, $last: Int, $before: String) {
    ...ConversationList_query @arguments(first: $first, after: $after, last: $last, before: $before)
  }
`;

/** The screen opened at a link: the conversations older than the one linked, with the history's default count. */
export const appHistoryQuery = graphql`
  query AppHistoryQuery($after: String) {
    ...ConversationHistory_query @arguments(after: $after)
  }
`;
