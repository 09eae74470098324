import type { ErrorRequestHandler, RequestHandler } from 'express';
import { requestIdOf } from './request-id.js';

/** Unknown paths answer JSON, like everything else. */
export const notFound: RequestHandler = (request, response) => {
  response.status(404).json({ status: false, error: `no such endpoint: ${request.method} ${request.path}` });
};

/** Last resort: an unexpected failure answers JSON without internals, naming the request for its log line. */
export function internalError(onError: (error: unknown) => void): ErrorRequestHandler {
  return (error, _request, response, next) => {
    if (response.headersSent) return next(error);
    onError(error);
    response.status(500).json({ status: false, error: 'internal error', request_id: requestIdOf(response) });
  };
}
