/** Limits the API promises, each stated once. */

/** The most conversations one page holds: the legacy list's 100 (spec §8), and the cap on GraphQL's `first`. */
export const MAX_PAGE_SIZE = 100;

/** The largest request body read, on `/graphql` and the legacy endpoints alike (413 above). */
export const BODY_LIMIT_BYTES = 100 * 1024;

/** The longest conversation name, in characters (Unicode code points), as the legacy web client's rename allowed. */
export const MAX_CONVERSATION_NAME_LENGTH = 256;
