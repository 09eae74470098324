import type { ServerResponse } from 'node:http';

import type { Request } from 'express';

import type { HttpAnswer } from '../errors.js';

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';
const GRAPHQL_RESPONSE = 'application/graphql-response+json';

/**
 * Writes a JSON body as it is, as `application/json` unless `headers` name another JSON media
 * type. Express's `send` would also hash every body for an ETag, which the legacy API never had
 * and its clients never send back.
 */
export function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.end(writeJsonHead(response, status, body, headers));
}

export function sendAnswer(response: ServerResponse, answer: HttpAnswer): void {
  sendJson(response, answer.status, answer.body, answer.headers);
}

/** Writes the whole answer but leaves the response open, for the caller to end (`refused-body.ts`). */
export function writeAnswer(response: ServerResponse, answer: HttpAnswer): void {
  response.write(writeJsonHead(response, answer.status, answer.body, answer.headers));
}

/**
 * Writes the status and headers of a JSON answer, and answers its body's bytes: encoded once, for
 * its length and its write alike (a long text from `JSON.stringify` is made of pieces, which
 * `Buffer.byteLength` and the socket's string write would each copy whole).
 */
function writeJsonHead(response: ServerResponse, status: number, body: unknown, headers: Record<string, string>): Buffer {
  const bytes = Buffer.from(JSON.stringify(body));
  response.writeHead(status, { 'content-type': JSON_CONTENT_TYPE, ...headers, 'content-length': bytes.length });
  return bytes;
}

/**
 * A GraphQL answer in the media type the request's `Accept` prefers, negotiated as Apollo Server
 * does for its own answers: `application/graphql-response+json` only when preferred over
 * `application/json`, which wins a tie, a missing header and one that accepts neither.
 */
export function inPreferredMediaType(answer: HttpAnswer, request: Request): HttpAnswer {
  if (request.accepts(['application/json', GRAPHQL_RESPONSE]) !== GRAPHQL_RESPONSE) return answer;
  return { ...answer, headers: { ...answer.headers, 'content-type': `${GRAPHQL_RESPONSE}; charset=utf-8` } };
}
