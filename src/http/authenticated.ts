import type { RequestHandler } from 'express';

import type { Authenticator, Caller } from '../auth/authenticator.js';
import { unauthenticated } from '../errors.js';
import { behind, type StepAfter } from './locals.js';

/** What the steps behind authentication read: the caller whose credentials were accepted. */
export interface CallerLocals {
  readonly caller: Caller;
}

/**
 * `steps` behind the step that authenticates the request: a request without accepted
 * credentials is refused (401) before anything is read, and each step that reads the caller is
 * handed it (`StepAfter<CallerLocals>`), which it can be only here.
 */
export function authenticated(
  authenticator: Pick<Authenticator, 'authenticate'>,
  ...steps: readonly (StepAfter<CallerLocals> | RequestHandler)[]
): RequestHandler[] {
  return behind(
    async (request): Promise<CallerLocals> => {
      const caller = await authenticator.authenticate(request.get('authorization'));
      if (caller === null) throw unauthenticated();
      return { caller };
    },
    ...steps,
  );
}
