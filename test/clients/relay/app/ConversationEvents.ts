import { graphql } from 'relay-runtime';

/**
 * Keeps the side bar's connections current from the live events alone: a conversation created
 * is put first, one deleted is taken out, one updated is updated in place.
 */
export const conversationEvents = graphql`
  subscription ConversationEventsSubscription($connections: [ID!]!) {
    conversationEvents {
      kind
      number
      conversation @prependNode(connections: $connections, edgeTypeName: "ConversationEdge") {
        id
        ...ConversationItem_conversation
      }
      deletedConversationId @deleteEdge(connections: $connections)
    }
  }
`;
