import type { Caller } from '../auth/authenticator.js';
import type { CallerSession } from '../rest/operation-runner.js';

/** What one step of a request hands on to the next ones, in `response.locals`. */
declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace -- Express declares its types in this namespace.
  namespace Express {
    interface Locals {
      /** Set once this process accepted the request's credentials. */
      caller?: Caller;
      /** The REST layer's session for the request's caller. */
      session?: CallerSession;
      /** The GraphQL operation the request runs, for the request log: named once it is known. */
      operation?: { readonly operationName: string | undefined };
    }
  }
}
