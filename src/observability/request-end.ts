import type { Request, Response } from 'express';

/** The matched route pattern stands for requests that matched none, so labels never carry raw URLs. */
const UNMATCHED_ROUTE = '(unmatched)';
/** nginx's code for a request whose client went away before its answer began. */
export const CLIENT_CLOSED_REQUEST = 499;

export interface RequestOutcome {
  /** The route pattern, e.g. `/conversation/load` or `/playground/assets/:file`; never the raw URL. */
  route: string;
  status: number;
  /** Until the response ended or the connection closed: for a refused body, after what was left of it was read (`http/refused-body.ts`). */
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
      // As nginx logs it: once the answer has begun, its status, even if the client went before its end.
      status: response.headersSent ? response.statusCode : CLIENT_CLOSED_REQUEST,
      durationSeconds: Number(process.hrtime.bigint() - started) / 1e9,
    });
  };
  response.once('finish', end);
  response.once('close', end);
}

/**
 * The path of the route the request matched, as the app declared it: Express matches paths without
 * regard to case, and its `baseUrl` is the client's spelling of a mount path, so neither the URL nor
 * `baseUrl` ever names a request. The app serves every endpoint as a route at its full path.
 */
export function routePattern(request: Request): string {
  const route = request.route as { path?: unknown } | undefined;
  return route?.path === undefined ? UNMATCHED_ROUTE : String(route.path);
}
