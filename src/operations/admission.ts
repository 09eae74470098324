import type { Caller } from '../auth/authenticator.js';
import type { Door } from '../observability/labels.js';

/** A caller asking to run an operation (or, over HTTP, one request) through a door. */
export interface Admission {
  readonly caller: Caller;
  readonly door: Door;
  /** The request's id: the HTTP request's, or the subscription's own over WebSocket. */
  readonly requestId: string;
}

/** One check of the admission sequence: throws a failure (`errors.ts`) to refuse the caller. */
export type AdmissionCheck = (admission: Admission) => Promise<void> | void;

/**
 * The checks every door runs once its caller is known, in order, before anything of the operation
 * is read (a `POST /graphql` asking for multipart subscriptions: once its body says whether it
 * is one, `http-streams/multipart.ts`): the per-caller rate limit, and whatever the composition
 * root adds. There is one list
 * and every door runs it, handing it the caller it named: HTTP requests (`/graphql` queries and
 * mutations, the REST table, the Server-Sent Events and multipart subscriptions) once each,
 * through the step `http/admission.ts` makes of it, and each subscribe message of a WebSocket,
 * since one socket carries many operations.
 */
export class AdmissionChecks {
  constructor(private readonly checks: readonly AdmissionCheck[]) {}

  async admit(admission: Admission): Promise<void> {
    for (const check of this.checks) await check(admission);
  }
}
