import { randomUUID } from 'node:crypto';
import type { RequestHandler, Response } from 'express';

/** An incoming id is kept when it is short and printable, so it can be followed across services. */
const ACCEPTED_ID = /^[\w.:-]{1,128}$/;

/** Gives every request an id (the caller's `X-Request-Id` or a new one), echoed in the response. */
export const assignRequestId: RequestHandler = (request, response, next) => {
  const incoming = request.get('x-request-id');
  const id = incoming !== undefined && ACCEPTED_ID.test(incoming) ? incoming : randomUUID();
  response.locals.requestId = id;
  response.set('X-Request-Id', id);
  next();
};

export function requestIdOf(response: Response): string {
  return response.locals.requestId as string;
}
