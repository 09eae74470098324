import type { RequestHandler } from 'express';

/**
 * Lets `GET /graphql?query=…` run queries with no extra header (the contract's "GET for
 * queries"). Apollo's CSRF prevention wants a header a browser cannot send cross-site
 * without a CORS preflight; `Authorization` is such a header, and this runs only after
 * `authenticated` (`http/authenticated.ts`) found valid credentials in it. POSTs keep Apollo's content-type rule,
 * and GET never runs a mutation (Apollo answers 405).
 */
export const credentialedGetIsPreflighted: RequestHandler = (request, _response, next) => {
  if (request.method === 'GET' && request.headers.authorization) request.headers['apollo-require-preflight'] = 'authorization';
  next();
};
