import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Logger } from '../logger.js';
import { requestIdOf } from './request-id.js';

/** Unknown paths answer JSON, like everything else. */
export const notFound: RequestHandler = (request, response) => {
  response.status(404).json({ status: false, error: `no such endpoint: ${request.method} ${request.path}` });
};

/** Last resort: an unexpected failure is logged and answers JSON without internals, naming the request for its log line. */
export function internalError(logger: Logger): ErrorRequestHandler {
  return (error, _request, response, next) => {
    if (response.headersSent) return next(error);
    const requestId = requestIdOf(response);
    logger.error({ err: error, requestId }, 'request failed');
    response.status(500).json({ status: false, error: 'internal error', request_id: requestId });
  };
}
