import type { IncomingMessage } from 'node:http';

import parseUrl from 'parseurl';
import { match } from 'path-to-regexp';

/** Where GraphQL is served: over HTTP, and as WebSocket subscriptions. */
export const GRAPHQL_PATH = '/graphql';

/** Where subscriptions are served as Server-Sent Events (the `graphql-sse` protocol). */
export const SSE_PATH = '/graphql/stream';

/**
 * Whether Express routes `request` to a route at `path`, whatever its method: the test its
 * router (the `router` package) applies to a route, with the app's default settings (neither
 * `case sensitive routing` nor `strict routing`). The pathname is read as the router reads it
 * (`parseurl`, nothing normalised: `/./graphql` is not `/graphql`), and matched by the same
 * library with the same options (any case, one optional trailing slash). For a door that is not
 * Express, so that it takes exactly the requests HTTP routes to the same path.
 */
export function routesTo(path: string): (request: IncomingMessage) => boolean {
  const matches = match(path, { sensitive: false, trailing: true, end: true });
  return (request) => {
    const pathname = pathnameOf(request);
    return pathname !== undefined && matches(pathname) !== false;
  };
}

/** The router's `getPathname`: a target parseurl cannot read matches no route. */
function pathnameOf(request: IncomingMessage): string | undefined {
  try {
    return parseUrl(request)?.pathname ?? undefined;
  } catch {
    return undefined;
  }
}
