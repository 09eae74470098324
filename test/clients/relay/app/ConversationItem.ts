import { graphql } from 'relay-runtime';

/** One row of the side bar, which can fetch itself again (through `Query.node`). */
export const conversationItem = graphql`
  fragment ConversationItem_conversation on Conversation @refetchable(queryName: "ConversationItemRefetchQuery") {
    id
    number
    name
    model
  }
`;
