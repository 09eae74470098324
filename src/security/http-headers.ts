import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';

import type { RequestHandler } from 'express';
import helmet from 'helmet';

/**
 * Helmet's protective headers on every response. Its default Content-Security-Policy
 * keeps every script, style and connection on this origin ('self'), which the
 * playground page at `GET /graphql` satisfies since it serves all its assets itself;
 * two changes: `upgrade-insecure-requests` is dropped because the service is often
 * reached over plain HTTP (development, or behind a TLS-terminating proxy), where it
 * would send the page's own asset requests to an https port that does not exist; and
 * no page of this service may be framed.
 */
const protect = helmet({
  contentSecurityPolicy: {
    directives: {
      'upgrade-insecure-requests': null,
      'frame-ancestors': ["'none'"],
    },
  },
  frameguard: { action: 'deny' },
});

/**
 * Helmet's headers, and the headers it removes. They are the same for every request (none of the
 * options above depends on it), so helmet runs once, at start, and each response gets the set it
 * made: a dozen small middlewares per request cost more than the headers themselves.
 */
const HEADERS = headersOf(protect);

export const securityHeaders: RequestHandler = (_request, response, next) => {
  response.setHeaders(HEADERS.set);
  for (const name of HEADERS.removed) response.removeHeader(name);
  next();
};

function headersOf(middleware: RequestHandler): { set: Map<string, string | string[]>; removed: string[] } {
  const response = new ServerResponse(new IncomingMessage(new Socket()));
  // What helmet sets, under the names as it spells them, and what it removes.
  const set = new Map<string, string | string[]>();
  const removed: string[] = [];
  response.setHeader = (name, value) => {
    set.set(name, typeof value === 'number' ? String(value) : typeof value === 'string' ? value : [...value]);
    return response;
  };
  response.removeHeader = (name) => void removed.push(name);
  let finished = false;
  middleware(response.req as never, response as never, () => (finished = true));
  // Helmet calls `next` synchronously; a change that made it wait would leave this set empty.
  if (!finished) throw new Error('helmet did not finish synchronously');
  return { set, removed };
}

/**
 * The first step of every API endpoint (`/graphql`, the REST layer): its answers are one
 * caller's data or about their credentials, so no browser or proxy cache may keep them,
 * failures included. Set before any other step, so every answer carries it.
 */
export const notStored: RequestHandler = (_request, response, next) => {
  response.setHeader('Cache-Control', 'no-store');
  next();
};
