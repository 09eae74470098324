import type { ErrorRequestHandler, Request, RequestHandler } from 'express';

import { type Failure, type FailureField, failureOf, graphqlAnswer, type HttpAnswer, legacyAnswer, noSuchEndpoint } from '../errors.js';
import { requestIdOf } from '../observability/request-log.js';
import { inPreferredMediaType, sendAnswer } from './json-answer.js';
import { answerUnreadBody, hasUnreadBody } from './refused-body.js';

/**
 * Answers whatever a step of the request threw, rendered for the surface it belongs to.
 * An unexpected failure is logged first, with its request id, since its answer tells nothing.
 * A request refused before its body arrived (credentials, rate limit, size) also loses its
 * connection, once the client could read the answer: otherwise Node would keep reading the
 * unwanted body, however slowly it comes. A request without a body keeps its connection.
 */
function answerFailures(render: (failure: Failure, requestId: string, request: Request) => HttpAnswer): ErrorRequestHandler {
  return (error: unknown, request, response, next) => {
    if (response.headersSent) return next(error);
    const failure = failureOf(error);
    const requestId = requestIdOf(request);
    if (failure.kind === 'internal') request.log.error({ err: failure.originalError ?? error, requestId }, 'request failed');
    const answer = render(failure, requestId, request);
    if (hasUnreadBody(request)) answerUnreadBody(request, response, answer);
    else sendAnswer(response, answer);
  };
}

/** Failures on `/graphql` before Apollo Server runs (credentials, limits, the body), as GraphQL responses. */
export const graphqlFailures = answerFailures((failure, requestId, request) =>
  inPreferredMediaType(graphqlAnswer(failure, requestId), request),
);

/** Failures of a legacy endpoint, in its usual shape; `error` also serves paths that match no endpoint. */
export const legacyFailures = (field: FailureField) => answerFailures((failure, requestId) => legacyAnswer(failure, field, requestId));

/** Unknown paths answer JSON, like everything else. */
export const noSuchPath: RequestHandler = (request) => {
  throw noSuchEndpoint(request.method, request.path);
};
