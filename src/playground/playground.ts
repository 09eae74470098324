import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

import { type Request, Router } from 'express';

import { GRAPHQL_PATH } from '../http/route-paths.js';
import { bootstrapScript, pageStyle } from './browser-files.js';
import { ASSETS_PATH, playgroundPage } from './page.js';

export interface PlaygroundOptions {
  /** Pre-filled in the headers editor, when given. */
  demoToken: string | undefined;
}

/** A Host header as browsers send it: a name or address, and a port. Anything else is left out of the policy. */
const HOST_PATTERN = /^[a-z0-9.-]+(:[0-9]{1,5})?$|^\[[0-9a-f:.]+\](:[0-9]{1,5})?$/i;

/**
 * Only this server is allowed: scripts, styles, fonts (inlined as data: URLs in GraphiQL's
 * stylesheet), API calls and the subscriptions' WebSocket (named by host: older browsers do not
 * count ws: and wss: as 'self'). No inline script at all; the one style element GraphiQL
 * creates at run time carries the response's nonce.
 */
function contentSecurityPolicy(styleNonce: string, host: string | undefined): string {
  const sockets = host !== undefined && HOST_PATTERN.test(host) ? ` ws://${host} wss://${host}` : '';
  return [
    "default-src 'none'",
    "script-src 'self'",
    `style-src 'self' 'nonce-${styleNonce}'`,
    "font-src 'self' data:",
    "img-src 'self' data:",
    `connect-src 'self'${sockets}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

const require = createRequire(import.meta.url);
const packageFile = (packageName: string, file: string) => join(dirname(require.resolve(`${packageName}/package.json`)), file);

/** Every file the page loads, all from this server: GraphiQL's prebuilt bundle with React's UMD builds. */
const files: Record<string, string> = {
  'react.production.min.js': packageFile('react', 'umd/react.production.min.js'),
  'react-dom.production.min.js': packageFile('react-dom', 'umd/react-dom.production.min.js'),
  'graphiql.min.js': packageFile('graphiql', 'graphiql.min.js'),
  'graphiql.min.css': packageFile('graphiql', 'graphiql.min.css'),
};
const generated: Record<string, { type: string; body: string }> = {
  'playground.js': { type: 'text/javascript', body: bootstrapScript },
  'playground.css': { type: 'text/css', body: pageStyle },
};

/** GraphiQL at `GET /graphql` for browsers (`Accept: text/html`), with its assets under `/playground/assets/`. */
export function playgroundRouter(options: PlaygroundOptions): Router {
  const page = playgroundPage(options.demoToken);
  const router = Router();

  router.get(GRAPHQL_PATH, (request, response, next) => {
    if (!prefersHtml(request)) return next();
    const styleNonce = randomBytes(16).toString('base64');
    response
      .set({
        'Content-Security-Policy': contentSecurityPolicy(styleNonce, request.get('host')),
        // The page may hold a token.
        'Cache-Control': 'no-store',
        'Referrer-Policy': 'no-referrer',
        'X-Content-Type-Options': 'nosniff',
      })
      .type('html')
      .send(page(styleNonce));
  });

  router.get(`${ASSETS_PATH}/:file`, (request, response, next) => {
    const file = request.params.file;
    response.set({ 'Cache-Control': 'public, max-age=3600', 'X-Content-Type-Options': 'nosniff' });
    const fromPackage = Object.hasOwn(files, file) ? files[file] : undefined;
    if (fromPackage !== undefined) return response.sendFile(fromPackage);
    const own = Object.hasOwn(generated, file) ? generated[file] : undefined;
    if (own !== undefined) return response.type(own.type).send(own.body);
    next();
  });

  return router;
}

/** A browser navigating here, as opposed to a GraphQL client sending a GET query. */
function prefersHtml(request: Request): boolean {
  return request.accepts(['application/json', 'application/graphql-response+json', 'text/html']) === 'text/html';
}
