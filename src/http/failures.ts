import type { ErrorRequestHandler, Request, RequestHandler } from 'express';

import { failureOf } from '../db/database-failures.js';
import { badRequest, Failure, type HttpAnswer, noSuchEndpoint, payloadTooLarge, unsupportedMediaType } from '../errors.js';
import { requestIdOf } from '../observability/request-log.js';
import { sendAnswer } from './json-answer.js';
import { answerUnreadBody, hasUnreadBody } from './refused-body.js';

/** Failures already logged where they happened (an operation's own), to be answered here and not logged again. */
const logged = new WeakSet<Failure>();

/** Marks a failure as logged where it happened, so that the handler below only answers it; returns it, to be thrown. */
export function alreadyLogged(failure: Failure): Failure {
  logged.add(failure);
  return failure;
}

/** The failure an error a request step threw stands for: body-parser's errors by their status and type, anything else by `failureOf`. */
export function failureOfRequest(error: unknown): Failure {
  // body-parser's errors carry a 4xx `status`, a `type` and, when too large, the `limit` in bytes.
  const { status, type, limit } = (error ?? {}) as { status?: unknown; type?: unknown; limit?: unknown };
  if (error instanceof Failure || typeof status !== 'number' || status < 400 || status >= 500) return failureOf(error);
  if (status === 413) return payloadTooLarge(Number(limit));
  if (status === 415) return unsupportedMediaType();
  return badRequest(type === 'entity.parse.failed' ? 'request body is not valid JSON' : 'request body could not be read');
}

/**
 * Answers whatever a step of the request threw, rendered by `render` for the surface it belongs to
 * (`graphql/failure-answer.ts`, `rest/legacy-answer.ts`): the one place each door writes an error body. An unexpected failure is logged first, with its request
 * id, since its answer tells nothing. A request refused before its body arrived (credentials,
 * rate limit, size) also loses its connection, once the client could read the answer: otherwise
 * Node would keep reading the unwanted body, however slowly it comes. A request without a body
 * keeps its connection.
 */
export function failureHandler(render: (failure: Failure, requestId: string, request: Request) => HttpAnswer): ErrorRequestHandler {
  return (error: unknown, request, response, next) => {
    if (response.headersSent) return next(error);
    const failure = failureOfRequest(error);
    const requestId = requestIdOf(request);
    if (failure.kind === 'internal' && !logged.has(failure)) {
      request.log.error({ err: failure.originalError ?? error, requestId }, 'request failed');
    }
    const answer = render(failure, requestId, request);
    if (hasUnreadBody(request)) answerUnreadBody(request, response, answer);
    else sendAnswer(response, answer);
  };
}

/** Unknown paths answer JSON, like everything else. */
export const noSuchPath: RequestHandler = (request) => {
  throw noSuchEndpoint(request.method, request.path);
};
