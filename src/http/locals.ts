import type { Caller } from '../auth/authenticator.js';
import type { OperationSession } from '../rest/executor.js';

/** What one step of a request hands on to the next ones, in `response.locals`. */
declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace -- Express declares its types in this namespace.
  namespace Express {
    interface Locals {
      /** Set once this process accepted the request's credentials. */
      caller?: Caller;
      /** The REST layer's session for the request's caller. */
      session?: OperationSession;
      /** The GraphQL operation a `/graphql` request ran, for the request log. */
      graphqlOperationName?: string;
    }
  }
}
