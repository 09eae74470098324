import type { IncomingMessage } from 'node:http';

import cors from 'cors';
import type { RequestHandler } from 'express';

import { originNotAllowed } from '../errors.js';

/** Methods the API is called with; GET, HEAD and POST need no permission, but a preflight may still ask. */
const METHODS = ['GET', 'POST'];
/**
 * Request headers a page may send: credentials, the JSON content type, what GraphQL clients add
 * (Apollo Client's CSRF header and client awareness, an id to follow a request through the logs),
 * and the key that makes a buy safe to retry.
 * `Authorization` must be named: a wildcard would not cover it.
 */
const REQUEST_HEADERS = [
  'Authorization',
  'Content-Type',
  'Apollo-Require-Preflight',
  'X-Apollo-Operation-Name',
  'Apollographql-Client-Name',
  'Apollographql-Client-Version',
  'X-Request-Id',
  'Idempotency-Key',
];
/** Response headers a page may read besides the safelisted ones: what it needs to retry, re-authenticate or report. */
const EXPOSED_HEADERS = ['Retry-After', 'WWW-Authenticate', 'Allow', 'X-Request-Id'];
/**
 * How long a browser may reuse a preflight's answer. Short enough that an origin removed from
 * the list loses its cached permission within minutes (answers lose their CORS headers at once).
 */
const PREFLIGHT_MAX_AGE_SECONDS = 600;

/**
 * CORS for the browser origins in `allowed` (CORS_ORIGINS), by the `cors` package. A preflight
 * from an allowed origin is answered here, 204, before any credential or limit is looked at
 * (it carries no credentials); any other answer to such an origin names it in
 * `Access-Control-Allow-Origin`. Requests from other origins pass untouched and get no CORS
 * header at all, so the browser withholds the answer and refuses to send anything that needed a
 * preflight: an `OPTIONS` from them is an ordinary request for a method the path does not serve.
 *
 * No `Access-Control-Allow-Credentials`: the API reads credentials only from the `Authorization`
 * header, which a page sets itself and CORS governs as a request header. Cookies and HTTP
 * authentication are not used, so nothing a browser attaches on its own is ever let through.
 * With a list configured every answer varies by `Origin`, so no cache serves one origin's
 * answer to another.
 */
export function crossOrigin(allowed: readonly string[]): RequestHandler {
  if (allowed.length === 0) return (_request, _response, next) => next();
  const origins = new Set(allowed);
  const answer = cors({
    origin: true,
    methods: METHODS,
    allowedHeaders: REQUEST_HEADERS,
    exposedHeaders: EXPOSED_HEADERS,
    maxAge: PREFLIGHT_MAX_AGE_SECONDS,
  });
  return (request, response, next) => {
    const origin = request.headers.origin;
    if (origin !== undefined && origins.has(origin)) return answer(request, response, next);
    response.vary('Origin');
    next();
  };
}

/**
 * The same rule for what a browser cannot be told by CORS headers, such as a WebSocket opening
 * (browsers send its page's origin and open it whatever the answer's headers): only the server's
 * own origin and those in `allowed` may; a request without `Origin` comes from no page.
 */
export function checkOrigin(request: IncomingMessage, allowed: readonly string[]): void {
  const origin = request.headers.origin;
  if (origin === undefined || allowed.includes(origin)) return;
  if (URL.canParse(origin) && new URL(origin).host === request.headers.host) return;
  throw originNotAllowed(origin);
}
