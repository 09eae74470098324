import type { ServerResponse } from 'node:http';

import type { HttpAnswer } from '../errors.js';

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * Writes a JSON body as it is. Express's `send` would also hash every body for an ETag,
 * which the legacy API never had and its clients never send back.
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

/** Writes the status and headers of a JSON answer, and answers its body's text. */
function writeJsonHead(response: ServerResponse, status: number, body: unknown, headers: Record<string, string>): string {
  const text = JSON.stringify(body);
  response.writeHead(status, { ...headers, 'content-type': JSON_CONTENT_TYPE, 'content-length': Buffer.byteLength(text) });
  return text;
}
