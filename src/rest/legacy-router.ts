import express, { type ErrorRequestHandler, type Request, Router } from 'express';

import { methodNotAllowed, unauthenticated } from '../errors.js';
import { declaredBodyWithinLimit } from '../http/body-limit.js';
import { alreadyLogged } from '../http/failures.js';
import { sendJson } from '../http/json-answer.js';
import { behind, type StepAfter, stepAfter } from '../http/locals.js';
import { BODY_LIMIT_BYTES } from '../limits.js';
import { requestIdOf } from '../observability/request-log.js';
import { notStored } from '../security/http-headers.js';
import { readInput } from './inputs.js';
import { legacyFailures } from './legacy-answer.js';
import type { CallerSession, OperationRunner, SessionLocals } from './operation-runner.js';
import type { PreparedRoute } from './prepared-routes.js';

const readBody = [declaredBodyWithinLimit, express.text({ type: () => true, limit: BODY_LIMIT_BYTES })];

export interface LegacyEndpointsOptions<S extends CallerSession> {
  /** Steps between authentication and the answer, such as the admission sequence; they read the session `runner` opened. */
  afterAuthentication: readonly StepAfter<SessionLocals<S>>[];
  /** A prefix under which every endpoint is served as well as at the root, e.g. `/api`. */
  basePath?: string | undefined;
}

/**
 * The legacy REST endpoints, built from the route table: a router, then the handler that answers
 * failures in each endpoint's shape (`legacy-answer.ts`), to be mounted together. That handler is
 * the one place an endpoint's failure is written, whether a step threw it or the operation
 * answered it. Each request is a chain of steps: mark the answer not to be stored, open the
 * caller's session (credentials first: a refused caller gets 401 before its body is even read),
 * the steps after authentication, read the body on POST, then answer. Every endpoint is served at
 * its path and under the base path, with the same answers.
 */
export function legacyEndpoints<S extends CallerSession>(
  routes: readonly PreparedRoute[],
  runner: OperationRunner<S>,
  options: LegacyEndpointsOptions<S>,
): [Router, ErrorRequestHandler] {
  const router = Router();
  const prefixes = options.basePath ? ['', options.basePath] : [''];
  const served = routes.flatMap((route) => prefixes.map((prefix) => ({ route, path: prefix + route.path })));
  for (const { route, path } of served) {
    const refuse = () => {
      throw methodNotAllowed(route.method);
    };
    const steps = [
      notStored,
      ...behind(openSession(runner), ...options.afterAuthentication, ...(route.method === 'POST' ? readBody : []), answer(route)),
    ];
    // One route per path, whatever the method: the router tests a request against each path once.
    const endpoint = router.route(path);
    // Express answers HEAD with the GET route; HEAD must never change anything, so such a route refuses it.
    if (route.method === 'GET' && route.prepared.changesData) endpoint.head(refuse);
    if (route.method === 'GET') endpoint.get(...steps);
    else endpoint.post(...steps);
    endpoint.all(refuse);
  }
  // At the app's level, not in the router: Express hands a router no failure thrown before it (the per-address limit).
  return [router, failuresInTheShapeOf(served)];
}

/**
 * Answers a failure in its endpoint's shape: the route that threw it, or the one at its path when
 * it was thrown before routing. Other paths are left to the fallback.
 */
function failuresInTheShapeOf(served: readonly { route: PreparedRoute; path: string }[]): ErrorRequestHandler {
  const handlers = new Map(served.map(({ route, path }) => [path.toLowerCase(), legacyFailures(route.failureField)]));
  return (error, request, response, next) => {
    // Express matches paths without regard to case or a trailing slash.
    const path = (request.route as { path?: string } | undefined)?.path ?? request.path.replace(/(.)\/$/, '$1');
    const answer = handlers.get(path.toLowerCase());
    if (answer === undefined) return next(error);
    answer(error, request, response, next);
  };
}

/** The caller's session, for the steps behind it; refused (401) when the runner refuses the credentials outright. */
function openSession<S extends CallerSession>(runner: OperationRunner<S>): (request: Request) => Promise<SessionLocals<S>> {
  return async (request) => {
    const session = await runner.open({
      authorization: request.get('authorization'),
      requestId: requestIdOf(request),
      clientAddress: request.ip,
    });
    if (session === null) throw unauthenticated();
    return { session, caller: session.caller };
  };
}

function answer(route: PreparedRoute): StepAfter<SessionLocals> {
  const operation = { operationName: route.prepared.name };
  return stepAfter(async (request, response, { session }) => {
    response.locals.operation = operation;
    const input = readInput(route.input, request);
    if ('failure' in input) {
      // Bad input still owes a caller whose credentials are refused upstream its 401 first.
      if (!(await session.confirmCaller())) throw unauthenticated();
      throw input.failure;
    }
    const outcome = await session.run(route.prepared, input.variables as Record<string, unknown>);
    if ('data' in outcome) return sendJson(response, 200, route.respond(outcome.data));
    // The operation's own failures were logged where they happened (or upstream): the failure handler only answers them.
    throw alreadyLogged(outcome.failure);
  });
}
