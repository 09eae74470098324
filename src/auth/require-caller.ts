import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Authenticator, Caller } from './authenticator.js';

/**
 * Lets a request through only with valid credentials; otherwise answers 401
 * with `WWW-Authenticate: Bearer` and the surface's own body, before anything is read.
 * A caller the authenticator does not admit (over its rate limit) goes to the error handlers.
 */
export function requireCaller(authenticator: Authenticator, unauthorizedBody: object): RequestHandler {
  const body = JSON.stringify(unauthorizedBody);
  return async (request: Request, response: Response, next: NextFunction) => {
    const caller = await authenticator.authenticate(request.get('authorization'));
    if (caller === null) {
      response.status(401).set('WWW-Authenticate', 'Bearer').type('application/json').send(body);
      return;
    }
    response.locals.caller = caller;
    next();
  };
}

export function callerOf(response: Response): Caller {
  return response.locals.caller as Caller;
}
