import type { RequestHandler } from 'express';

import { payloadTooLarge } from '../errors.js';
import { BODY_LIMIT_BYTES } from '../limits.js';

/**
 * Refuses a body that declares more than `BODY_LIMIT_BYTES` before anything reads it. Express's
 * body parsers would refuse it too, but only once they had read it off to the end, however slowly
 * it came; this way the refusal, and the end of the connection (`failures.ts`), come at once.
 */
export const declaredBodyWithinLimit: RequestHandler = (request, _response, next) => {
  if (Number(request.get('content-length')) > BODY_LIMIT_BYTES) throw payloadTooLarge(BODY_LIMIT_BYTES);
  next();
};
