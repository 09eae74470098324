import { graphql } from 'relay-runtime';

/** Deletes a conversation and removes its record from the store, with nothing fetched again. */
export const deleteConversation = graphql`
  mutation DeleteConversationMutation($id: ID!) {
    deleteConversation(id: $id) {
      ok
      error {
        code
        message
      }
      deletedConversationId @deleteRecord
    }
  }
`;
