import { toGlobalId } from '../graphql/global-id.js';
import { DEMO_USER_ID } from '../seed/demo-data.js';

/** The playground's starting tabs: one per thing people first try with this API. */
export interface ExampleOperation {
  query: string;
  /** JSON text for the variables editor. */
  variables?: string;
}

/** The demo data's third conversation, which the mutation tabs name (for another caller, an unknown one). */
const DEMO_CONVERSATION_ID = toGlobalId({ type: 'Conversation', userId: DEMO_USER_ID, number: 3 });

export const exampleOperations: readonly ExampleOperation[] = [
  {
    query: `# Your conversations, newest first, with their messages.
# Pass pageInfo.endCursor as $after to get the next page
# (or $last with pageInfo.startCursor as $before to go back).
# Each has a global id (for node and the mutations) and its
# number (what the REST endpoints call its id).
query Conversations($first: Int = 5, $after: String) {
  conversations(first: $first, after: $after) {
    totalCount
    pageInfo {
      hasNextPage
      hasPreviousPage
      startCursor
      endCursor
    }
    nodes {
      id
      number
      name
      model
      enableWeb
      messages {
        role
        content
      }
    }
  }
}
`,
    variables: '{\n  "first": 5\n}',
  },
  {
    query: `# Your balance in points.
query Quota {
  quota
}
`,
  },
  {
    query: `# Balance (live): your balance now, then each change
# as it happens (a purchase, a gift, a chat charged),
# over a WebSocket. Run it, buy points elsewhere, and
# watch; the stop button ends it.
subscription BalanceLive {
  quota
}
`,
  },
  {
    query: `# Your conversations as they are created, renamed,
# written to or deleted, by any device or writer.
# The conversation is null once deleted.
subscription ConversationEvents {
  conversationEvents {
    kind
    conversationId
    number
    conversation {
      name
      messages {
        role
        content
      }
    }
  }
}
`,
  },
  {
    query: `# Fetches any object again by its global id (a conversation's id from the list).
query Node($id: ID!) {
  node(id: $id) {
    id
    ... on Conversation {
      number
      name
    }
  }
}
`,
    variables: `{\n  "id": "${DEMO_CONVERSATION_ID}"\n}`,
  },
  {
    query: `# Deletes one of your conversations by its global id; an unknown id answers ok: false with NOT_FOUND.
mutation DeleteConversation($id: ID!) {
  deleteConversation(id: $id) {
    ok
    error {
      code
      message
    }
    deletedConversationId
  }
}
`,
    variables: `{\n  "id": "${DEMO_CONVERSATION_ID}"\n}`,
  },
  {
    query: `# Renames one of your conversations (1 to 256 characters, not blank); the name is stored as given.
mutation RenameConversation($id: ID!, $name: String!) {
  renameConversation(id: $id, name: $name) {
    ok
    error {
      code
      message
    }
    conversation {
      id
      name
    }
  }
}
`,
    variables: `{\n  "id": "${DEMO_CONVERSATION_ID}",\n  "name": "Renamed in the playground"\n}`,
  },
  {
    query: `# Deletes ALL your conversations; their numbers are never reused.
mutation DeleteAllConversations {
  deleteAllConversations {
    ok
    deletedCount
  }
}
`,
  },
  {
    query: `# Buys points (1 unit of money = 10 points); official deployment only.
# Sent again with the same idempotencyKey within 24 hours, it buys nothing more
# and answers as the first time: use a new key for each purchase you mean.
mutation Buy($quota: Int!, $idempotencyKey: String) {
  buy(quota: $quota, idempotencyKey: $idempotencyKey) {
    ok
    quota
    error {
      code
      message
    }
  }
}
`,
    variables: '{\n  "quota": 100,\n  "idempotencyKey": "playground-purchase-1"\n}',
  },
];
