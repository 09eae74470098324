import express, { Router, type ErrorRequestHandler, type Request, type RequestHandler, type Response } from 'express';
import { isDatabaseUnavailable } from '../db/database.js';
import { requestIdOf } from '../http/request-id.js';
import { RateLimitedError, rateLimitedErrorIn, sendRateLimited } from '../security/rate-limit.js';
import { UNAUTHORIZED, type OperationExecutor, type OperationResult, type OperationSession, type PreparedRoute } from './executor.js';
import { failureBody, type LegacyBody, type RestRoute } from './route.js';
import { UpstreamUnavailableError } from './remote-executor.js';

const BODY_LIMIT = '100kb';
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';
const readBody = express.text({ type: () => true, limit: BODY_LIMIT });

/** Errors raised by the GraphQL side that the legacy API answers as ordinary failures. */
const EXPECTED_FAILURE_CODES = new Set(['UNAVAILABLE', 'BAD_USER_INPUT']);
const UNAVAILABLE_CODES = new Set(['DATABASE_UNAVAILABLE', 'SERVICE_UNAVAILABLE']);
/** The database or the upstream gateway cannot answer: HTTP 503 in the endpoint's shape. */
const SERVICE_UNAVAILABLE_TEXT = 'service temporarily unavailable, try again later';

/**
 * The legacy REST endpoints, built from the route table. Each request: check the
 * credentials, turn the request into variables (or a failure sentence), run the
 * route's operation, and shape the answer into the legacy body.
 */
export function createLegacyRouter(routes: readonly PreparedRoute[], executor: OperationExecutor): Router {
  const router = Router();
  for (const route of routes) {
    // Credentials first: a refused caller gets 401 before its body is even read.
    const steps: RequestHandler[] = [openSession(route, executor), ...(route.method === 'POST' ? [readBody] : []), handle(route)];
    if (route.method === 'GET') router.get(route.path, ...steps);
    else router.post(route.path, ...steps);
    router.all(route.path, (_request, response) => {
      response.status(405).set('Allow', route.method).json(failureBody(route, `method not allowed; use ${route.method}`));
    });
  }
  router.use(legacyErrorHandler(routes));
  return router;
}

function openSession(route: PreparedRoute, executor: OperationExecutor): RequestHandler {
  return async (request, response, next) => {
    const session = await executor.open({
      authorization: request.get('authorization'),
      requestId: requestIdOf(response),
      clientAddress: request.ip,
    });
    if (session === null) return unauthorized(response, route);
    response.locals.caller = session.caller;
    response.locals.session = session;
    next();
  };
}

function handle(route: PreparedRoute): RequestHandler {
  return (request, response) => answer(route, response.locals.session as OperationSession, request, response);
}

async function answer(route: PreparedRoute, session: OperationSession, request: Request, response: Response): Promise<void> {
  const input = route.input.parse({
    query: new URLSearchParams(request.originalUrl.split('?')[1] ?? ''),
    body: typeof request.body === 'string' ? request.body : '',
  });
  if (!input.ok) {
    if (!(await session.confirmCaller())) return unauthorized(response, route);
    return send(response, 200, failureBody(route, input.problem));
  }
  const result = await session.run(route.prepared, input.value as Record<string, unknown>);
  if (result === UNAUTHORIZED) return unauthorized(response, route);
  // A remote gateway (sidecar mode) limits the caller itself; its refusal is answered like a local one.
  const limited = rateLimitedErrorIn(result);
  if (limited) throw limited;
  const [status, body] = shape(route, result);
  // An internal error names the request, so a report can be matched with its log line.
  send(response, status, status === 500 ? { ...body, request_id: requestIdOf(response) } : body);
}

function shape(route: PreparedRoute, result: OperationResult): [number, LegacyBody] {
  const error = result.errors?.[0];
  if (error === undefined && result.data) return [200, route.respond(result.data)];
  const code = error?.extensions?.code;
  if (typeof code === 'string' && EXPECTED_FAILURE_CODES.has(code)) return [200, failureBody(route, error!.message)];
  if (typeof code === 'string' && UNAVAILABLE_CODES.has(code)) {
    return [503, failureBody(route, SERVICE_UNAVAILABLE_TEXT)];
  }
  return [500, failureBody(route, 'internal error')];
}

function unauthorized(response: Response, route: Pick<RestRoute, 'failureField'>): void {
  response.set('WWW-Authenticate', 'Bearer');
  send(response, 401, failureBody(route, 'unauthorized'));
}

/**
 * Writes the JSON body as it is. Express's `send` would also hash every body for an ETag,
 * which the legacy API never had and its clients never send back.
 */
function send(response: Response, status: number, body: LegacyBody): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': JSON_CONTENT_TYPE, 'content-length': Buffer.byteLength(text) }).end(text);
}

/** Failures outside an operation (oversized body, upstream down) still answer in the endpoint's shape. */
function legacyErrorHandler(routes: readonly PreparedRoute[]): ErrorRequestHandler {
  const byPath = new Map(routes.map((route) => [route.path, route]));
  return (error: unknown, request, response, next) => {
    const route = byPath.get(request.path);
    if (route === undefined || response.headersSent) return next(error);
    if (error instanceof UpstreamUnavailableError || isDatabaseUnavailable(error)) {
      return send(response, 503, failureBody(route, SERVICE_UNAVAILABLE_TEXT));
    }
    if (error instanceof RateLimitedError) return sendRateLimited(response, error, failureBody(route, error.message));
    const status = (error as { status?: unknown }).status;
    if (status === 413) return send(response, 413, failureBody(route, 'request body too large'));
    if (typeof status === 'number' && status >= 400 && status < 500) {
      return send(response, 200, failureBody(route, 'request body could not be read'));
    }
    next(error);
  };
}
