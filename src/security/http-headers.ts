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
export const securityHeaders = helmet({
  contentSecurityPolicy: {
    directives: {
      'upgrade-insecure-requests': null,
      'frame-ancestors': ["'none'"],
    },
  },
  frameguard: { action: 'deny' },
});

/**
 * The first step of every API endpoint (`/graphql`, the REST layer): its answers are one
 * caller's data or about their credentials, so no browser or proxy cache may keep them,
 * failures included. Set before any other step, so every answer carries it.
 */
export const notStored: RequestHandler = (_request, response, next) => {
  response.setHeader('Cache-Control', 'no-store');
  next();
};
