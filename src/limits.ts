/** Limits the API promises, each stated once. */

/** The most conversations one page holds: the 100 newest that `GET /conversation/list` answers, and the cap on GraphQL's `first` and `last`. */
export const MAX_PAGE_SIZE = 100;

/** The largest request body read, on `/graphql` and the legacy endpoints alike (413 above). */
export const BODY_LIMIT_BYTES = 100 * 1024;

/**
 * What a WebSocket message still being assembled may hold besides its bytes (at most
 * `BODY_LIMIT_BYTES`): `ws` keeps each of its fragments, and each read its frames came in until
 * a frame is whole, at about 250 to 300 bytes each however small (1 byte, say). Past either bound
 * the socket is closed with 1008. Clients send a message in one frame, read in a few: a 100 kB
 * one comes in about 70 reads of 1.4 kB TCP segments.
 */
export const WEBSOCKET_MESSAGE_ASSEMBLY = {
  /** Frames of one message (`ws`'s `maxFragments`; its default is 16 384). */
  fragments: 16,
  /** Reads held at once while a frame is incomplete (`ws`'s `maxBufferedChunks`; its default is 262 144). */
  reads: 96,
} as const;

/** How often every WebSocket is pinged (`websocket/websocket-server.ts`); a socket that does not answer before the next beat is dropped. */
export const KEEP_ALIVE_MS = 12_000;

/** How long a WebSocket may wait before its `connection_init` (graphql-ws's own default): past it, it is closed with 4408. */
export const CONNECTION_INIT_WAIT_MS = 3_000;

/** How long a WebSocket the server closes may take to answer with its close frame before it is cut (ws waits 30 s). */
export const CLOSE_GRACE_MS = 2_000;

/** The points one purchase buys, at least and at most, over `POST /buy` and GraphQL's `buy` alike. */
export const PURCHASE_RANGE = { min: 1, max: 99_999 } as const;

/**
 * Limits on every GraphQL operation, whatever door it comes through (`operations/limits.ts`
 * applies them). The schema's deepest useful path is 5 fields
 * (`conversations.edges.node.messages.role`), the legacy web client's operations have under 30
 * tokens and no aliases, and GraphiQL's introspection query has under 200 tokens.
 */
export const OPERATION_LIMITS = {
  /** Lexical tokens in the document; parsing stops at the first one over. */
  tokens: 1_000,
  aliases: 15,
  /** Nested fields; fragments add no level of their own. */
  depth: 6,
  directives: 10,
  /** See `operations/operation-cost.ts`: a page of 100 conversations with their messages costs 3 301, a balance read 1. */
  cost: 5_000,
} as const;

/**
 * An idempotency key of a purchase: 1 to 255 visible ASCII characters (no space, no control
 * character), over `POST /buy`'s `Idempotency-Key` and GraphQL's `buy` alike.
 */
export const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/**
 * Changes one subscription may have waiting to be sent (`subscriptions/inbox.ts`). Past that, a
 * balance subscription reads the balance again instead, and a conversation-events subscription
 * ends with EVENTS_LOST.
 */
export const SUBSCRIPTION_INBOX_CAPACITY = 100;

/** The longest conversation name, in characters (Unicode code points), as the legacy web client's rename allowed. */
export const MAX_CONVERSATION_NAME_LENGTH = 256;

/**
 * The longest conversation name a seed file or the import takes as stored, in characters (code
 * points): Chat Nio's `conversation_name` column (VARCHAR(255)).
 */
export const MAX_STORED_CONVERSATION_NAME_LENGTH = 255;

/** The longest username, in characters (code points): Chat Nio's widest text column (VARCHAR(255)); its own usernames are far shorter. */
export const MAX_USERNAME_LENGTH = 255;

/** The longest model name, in characters (code points): Chat Nio's `model` column (VARCHAR(255)). */
export const MAX_MODEL_NAME_LENGTH = 255;

/** The longest message role, in characters (code points): roles are single words (`system`, `user`, `assistant`, `tool`). */
export const MAX_MESSAGE_ROLE_LENGTH = 64;

/** The longest credential (access token or API key) an `Authorization` header may carry, in characters; longer ones are refused unread. */
export const MAX_CREDENTIAL_LENGTH = 4096;

/**
 * What one connection may hold of the HTTP server (gateway and REST sidecar alike), set in
 * `http/server.ts`. A request whose body is refused before it is read (401, 413, 429) also
 * closes its connection once the client could read the answer, within `REFUSED_BODY_DRAIN`, so a
 * trickled body holds little.
 */
export const HTTP_SERVER_LIMITS = {
  /** Request line and headers larger than this are refused with 431 (Node's default, made explicit). */
  maxHeaderBytes: 16 * 1024,
  /** From the first byte of a request (or of a connection) to the end of its headers; then 408 and the connection closes. */
  headersTimeoutMs: 10_000,
  /** From the first byte of a request to the end of its body (at most `BODY_LIMIT_BYTES`); then 408. */
  requestTimeoutMs: 30_000,
  /** An idle keep-alive connection closes after this: longer than the 60 s idle timeout of common load balancers, which close first. */
  keepAliveTimeoutMs: 65_000,
  /** How often the timeouts above are checked (Node's default is 30 s, which lets them overrun by that much). */
  timeoutCheckIntervalMs: 1_000,
  /** Connections open at once; further ones are closed as they arrive. */
  maxConnections: 10_000,
} as const;

/**
 * What a connection may still send of a body refused before it was read (401, 413, 429), after
 * its answer is written and before the connection closes (`http/refused-body.ts`). Closing while
 * the client is still sending resets the connection, and a client busy sending (Node's fetch among
 * them) then reports the reset instead of the answer it was sent (RFC 9112 §9.6). A client stops
 * sending once it has read the answer, within a round trip or two; a trickle or a flood is cut here.
 */
export const REFUSED_BODY_DRAIN = {
  /** From the answer to the close, at most. */
  timeoutMs: 2_000,
  /**
   * Read and thrown away, at most: well over what a client still has in flight when it reads the
   * answer (Node's fetch sending 50 MB over loopback had sent up to 6 MB more by then).
   */
  maxBytes: 16 * 1024 * 1024,
} as const;

/**
 * Verified access tokens one process holds (`auth/verified-tokens.ts`), about 0.5 KB each: more than
 * the callers one instance serves within a token's lifetime, so each token's signature is checked once.
 */
export const VERIFIED_TOKENS_HELD = 10_000;

/**
 * How long live connections (WebSockets, event streams) have, once the server stops, to end in
 * their protocol's words (a close frame, a last `complete` event or close delimiter) before
 * they are cut: a client that does not read its end does not hold the stop.
 */
export const LIVE_CONNECTIONS_CLOSE_BUDGET_MS = 3_000;
