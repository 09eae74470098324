import type { Request, Response } from 'express';

/** The matched route pattern stands for requests that matched none, so labels never carry raw URLs. */
const UNMATCHED_ROUTE = '(unmatched)';
/** nginx's code for a request whose client went away before the answer was sent. */
export const CLIENT_CLOSED_REQUEST = 499;

export interface RequestOutcome {
  /** The route pattern, e.g. `/conversation/load` or `/playground/assets/:file`; never the raw URL. */
  route: string;
  status: number;
  durationSeconds: number;
}

/** Calls `done` once when the request ends: answered, or abandoned by the client. */
export function whenRequestEnds(request: Request, response: Response, done: (outcome: RequestOutcome) => void): void {
  const started = process.hrtime.bigint();
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    done({
      route: routePattern(request),
      status: response.writableFinished ? response.statusCode : CLIENT_CLOSED_REQUEST,
      durationSeconds: Number(process.hrtime.bigint() - started) / 1e9,
    });
  };
  response.once('finish', end);
  response.once('close', end);
}

export function routePattern(request: Request): string {
  const route = request.route as { path?: unknown } | undefined;
  if (route?.path !== undefined) return `${request.baseUrl}${String(route.path)}`;
  // Mounted handlers (`app.use('/graphql', …)`) have no route of their own, only their mount path.
  return request.baseUrl || UNMATCHED_ROUTE;
}
