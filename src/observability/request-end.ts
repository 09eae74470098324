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

/** What waits for one request's end: when it began, and who wants to know. */
interface Waiting {
  started: bigint;
  done: ((outcome: RequestOutcome) => void)[];
}

const waiting = new WeakMap<Response, Waiting>();

/**
 * Calls `done` once when the request ends: answered, or abandoned by the client. Every caller on
 * one request (the log, the metrics) shares one listener and one clock, started by the first.
 */
export function whenRequestEnds(request: Request, response: Response, done: (outcome: RequestOutcome) => void): void {
  const known = waiting.get(response);
  if (known !== undefined) {
    // A new array of the exact length: a push would give it room for 16 more, held as long as a live stream.
    known.done = [...known.done, done];
    return;
  }
  const entry: Waiting = { started: process.hrtime.bigint(), done: [done] };
  waiting.set(response, entry);
  // A response emits `close` once, after its end or when its connection went first: `on` rather
  // than `once`, whose wrapper a live stream's response would hold for its whole life besides.
  response.on('close', () => {
    const outcome = {
      route: routePattern(request),
      // As nginx logs it: once the answer has begun, its status, even if the client went before its end.
      status: response.headersSent ? response.statusCode : CLIENT_CLOSED_REQUEST,
      durationSeconds: Number(process.hrtime.bigint() - entry.started) / 1e9,
    };
    for (const tell of entry.done) tell(outcome);
  });
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
