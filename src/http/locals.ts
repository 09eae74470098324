import type { NextFunction, Request, RequestHandler, Response } from 'express';

import type { Caller } from '../auth/authenticator.js';

/** What every request may carry in `response.locals`, for the request log (`observability/request-log.ts`). */
declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace -- Express declares its types in this namespace.
  namespace Express {
    interface Locals {
      /** Set once this process accepted the request's credentials. */
      caller?: Caller;
      /** The GraphQL operation the request runs, for the request log: named once it is known. */
      operation?: { readonly operationName: string | undefined };
    }
  }
}

/**
 * A step that reads the locals `L` an earlier step made, handed to it typed. It is no Express
 * step (Express cannot call it): only `behind` mounts it, after the step that makes `L`, so
 * that the order of the steps is the type checker's to enforce, not a runtime check's.
 */
export interface StepAfter<L extends object> {
  readonly run: (request: Request, response: Response, locals: Readonly<L>, next: NextFunction) => unknown;
}

/** `run` as a step that reads the locals `L`. */
export function stepAfter<L extends object>(run: StepAfter<L>['run']): StepAfter<L> {
  return { run };
}

/**
 * `make` as an Express step, then `steps`: `make` reads the request and resolves to the locals
 * `L` (or throws, and no later step runs); they are set on the response before the next step
 * runs, and each step of `steps` that reads them is handed them. Steps that read nothing of
 * them (a body parser) go among them as they are.
 */
export function behind<L extends object>(
  make: (request: Request) => Promise<L> | L,
  ...steps: readonly (StepAfter<L> | RequestHandler)[]
): RequestHandler[] {
  const first: RequestHandler = async (request, response, next) => {
    Object.assign(response.locals, await make(request));
    next();
  };
  // `first` ran before any of them, and set `L`.
  const mounted = steps.map((step): RequestHandler =>
    typeof step === 'function' ? step : (request, response, next) => step.run(request, response, response.locals as unknown as L, next),
  );
  return [first, ...mounted];
}
