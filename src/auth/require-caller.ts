import type { RequestHandler, Response } from 'express';

import { unauthenticated } from '../errors.js';
import type { Authenticator, Caller } from './authenticator.js';

/** Lets a request through only with accepted credentials, naming its caller; refuses it before anything is read. */
export function requireCaller(authenticator: Authenticator): RequestHandler {
  return async (request, response, next) => {
    const caller = await authenticator.authenticate(request.get('authorization'));
    if (caller === null) throw unauthenticated();
    response.locals.caller = caller;
    next();
  };
}

/** The caller `requireCaller` accepted. */
export function callerOf(response: Response): Caller {
  const { caller } = response.locals;
  if (caller === undefined) throw new Error('no caller: requireCaller must run first');
  return caller;
}
