import type { IncomingMessage, ServerResponse } from 'node:http';

import type { HttpAnswer } from '../errors.js';
import { REFUSED_BODY_DRAIN } from '../limits.js';
import { writeAnswer } from './json-answer.js';

/**
 * Answers a request whose body is refused before it is read, then closes its connection so that
 * the client can read the answer (RFC 9112 §9.6). Node closes a `Connection: close` connection as
 * soon as the answer is out; the client, still sending, has it reset and may lose the answer. So
 * the whole answer is written first, saying `Connection: close`; what still comes of the body is
 * read and thrown away (no body parser sees it) until the client stops sending, for at most
 * `REFUSED_BODY_DRAIN`; only then does the response end, and Node close the connection.
 */
export function answerUnreadBody(request: IncomingMessage, response: ServerResponse, answer: HttpAnswer): void {
  response.setHeader('Connection', 'close');
  writeAnswer(response, answer);
  discardBody(request, () => response.end());
}

/**
 * Whether some of `request`'s body may still come: it has one (RFC 9112 §6.3: a
 * `Transfer-Encoding`, or a `Content-Length` above 0) not yet read to its end. A request without
 * either has none, though Node marks it complete only once the steps that answer it at once
 * (a 404, a missing credential) have run.
 */
export function hasUnreadBody(request: IncomingMessage): boolean {
  if (request.complete) return false;
  const { 'transfer-encoding': transferEncoding, 'content-length': contentLength } = request.headers;
  return transferEncoding !== undefined || Number(contentLength ?? 0) > 0;
}

/** Reads the rest of `request`'s body into nothing; calls `done` once when it ends, the client goes, or a bound is reached. */
function discardBody(request: IncomingMessage, done: () => void): void {
  if (request.readableEnded || request.destroyed) return done();
  let discarded = 0;
  const stop = () => {
    clearTimeout(timer);
    request.off('data', discard).off('end', stop).off('close', stop);
    done();
  };
  const discard = (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > REFUSED_BODY_DRAIN.maxBytes) stop();
  };
  const timer = setTimeout(stop, REFUSED_BODY_DRAIN.timeoutMs);
  request.on('data', discard).once('end', stop).once('close', stop);
}
