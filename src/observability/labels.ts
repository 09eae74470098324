/**
 * Labels that metrics, log fields and spans share. They live here, below everything that uses
 * them, so that observing an operation never imports the code that runs it.
 */

/** Where an operation came in: a door of the gateway. */
export type Door = 'graphql' | 'rest' | SubscriptionTransport;

/** The doors that serve subscriptions: graphql-ws over WebSocket, graphql-sse, Apollo's multipart HTTP. */
export type SubscriptionTransport = 'websocket' | 'sse' | 'multipart';

/** Which code ran an operation: graphql-jit's compiled JavaScript, or graphql-js interpreting the document. */
export type ExecutorKind = 'compiled' | 'graphql-js';
