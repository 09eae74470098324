import type { IncomingMessage, ServerResponse } from 'node:http';

import type { CallerLocals } from '../http/authenticated.js';
import { type StepAfter, stepAfter } from '../http/locals.js';
import { requestIdOf } from '../observability/request-log.js';
import type { ConnectionEnds, LiveConnection } from '../operations/live-connections.js';
import type { OperationPipeline } from '../operations/pipeline.js';
import { answerText } from '../operations/shared-executions.js';
import { type LiveResults, SubscriptionFailure } from '../operations/subscriptions.js';
import { addressKey } from '../security/rate-limit.js';
import { isRecord } from '../shared/is-record.js';
import type { StreamedResponse, StreamedResponses } from './streamed-responses.js';

/** The boundary between parts, as Apollo Router writes it (`--graphql`). */
const BOUNDARY = 'graphql';
const CONTENT_TYPE = `multipart/mixed;boundary="${BOUNDARY}";subscriptionSpec="1.0"`;
/** Apollo's heartbeat: an empty part this often, so that proxies and the client know the stream lives. */
export const HEARTBEAT_MS = 5_000;
/**
 * Each part is followed at once by the next delimiter: a reader (Apollo Client's included) takes a
 * part as whole only once it sees the delimiter after it, so a part waiting for the next one
 * would reach the client one event late. The body opens with a delimiter and ends by turning the
 * last one into the close delimiter (RFC 2046 §5.1.1).
 */
const DELIMITER = `\r\n--${BOUNDARY}`;
const CLOSE = '--\r\n';

/** One part of the multipart body (a JSON text), with the delimiter after it. */
const partOf = (json: string) => `\r\ncontent-type: application/json; charset=utf-8\r\n\r\n${json}${DELIMITER}`;
/** One part of the multipart body (a JSON value), with the delimiter after it. */
const part = (body: unknown) => partOf(JSON.stringify(body));

/** The part of each answer made so far, for as long as the answer lives. */
const answerParts = new WeakMap<object, string>();

/**
 * The part of an answer, `{"payload":…}`: made once for every stream that shares the answer
 * (one object for all of them), its JSON the answer's shared text (`answerText`); the same bytes
 * as `part({ payload: answer })`.
 */
function answerPart(answer: object): string {
  let text = answerParts.get(answer);
  if (text === undefined) answerParts.set(answer, (text = partOf(`{"payload":${answerText(answer)}}`)));
  return text;
}

/**
 * Whether a request asks for Apollo's multipart HTTP subscriptions: its `Accept` offers
 * `multipart/mixed` with `subscriptionSpec=1.0` (Apollo Client, Apollo Kotlin and Apollo iOS send
 * it for subscriptions).
 */
export function asksForMultipartSubscription(request: IncomingMessage): boolean {
  return (request.headers.accept ?? '')
    .split(',')
    .some((range) => /^\s*multipart\/mixed\s*(;|$)/i.test(range) && /;\s*subscriptionSpec\s*=\s*"?1\.0"?\s*(;|$)/i.test(range));
}

/**
 * Whether `/graphql`'s admission waits for the multipart step: a POST asking for multipart
 * subscriptions is admitted there, once its body says whether it is one (`multipartSubscriptions`).
 */
export function admittedByMultipartStep(request: IncomingMessage): boolean {
  return request.method === 'POST' && asksForMultipartSubscription(request);
}

/**
 * The multipart door: Apollo's multipart HTTP subscriptions on `POST /graphql`, as Apollo Router
 * serves them. A step of `/graphql`'s route, after the caller is known and the JSON body read. For
 * a POST whose `Accept` asks for them, it makes the request's one decision: the pipeline resolves
 * the document it names (`OperationPipeline.resolve`: the trusted-documents rule, then the document
 * stage, once), the request is admitted as `multipart` when that is a subscription and as `graphql`
 * otherwise, and the resolved subscription goes to `subscribe` as it is. Any other request goes on
 * to Apollo Server (which answers queries and mutations, and refuses a subscription over plain
 * HTTP). Apollo Server 5 does not serve subscriptions over HTTP, and its request pipeline runs an
 * operation to one answer; a subscription is many, so it is taken here, before Apollo, and run by
 * the same operation pipeline Apollo runs on.
 *
 * Its live connection (the pipeline's `LiveConnections`) opens before the subscription does, so
 * that a client gone while it opens leaves nothing running. The answer is
 * `multipart/mixed;boundary="graphql";subscriptionSpec="1.0"`: each event a part
 * `{"payload":{"data":…}}`, `{}` every 5 s as a heartbeat, a subscription refused before it ran
 * one part `{"payload":{"errors":[…]}}`, one that fails (or whose credential expires)
 * `{"payload":null,"errors":[…]}`, and the close delimiter `--graphql--` when it completes (the
 * server stopping included).
 */
export function multipartSubscriptions(pipeline: OperationPipeline, streams: StreamedResponses): StepAfter<CallerLocals> {
  return stepAfter(async (request, response, { caller }, next) => {
    if (!admittedByMultipartStep(request)) return next();
    const body: unknown = request.body;
    const subscription = isRecord(body) ? pipeline.resolve(body) : undefined;
    const requestId = requestIdOf(request);
    await pipeline.admission.admit({ caller, door: subscription === undefined ? 'graphql' : 'multipart', requestId });
    if (subscription === undefined) return next();
    const { connections } = pipeline;
    const ends = new MultipartEnds();
    const connection = connections.connect('multipart', addressKey(request.ip), ends, { caller, socket: request.socket });
    const stream = (ends.stream = streams.track(response, connection, finish));
    const answer = await pipeline.subscribe(subscription, { caller, door: 'multipart', requestId });
    if (!connection.isOpen || connections.isClosing) {
      if (!('refused' in answer)) await answer.return();
      if (!connection.isOpen) return;
    }
    response.writeHead(200, { 'content-type': CONTENT_TYPE });
    // Sent by themselves, the head's text is made flat once: the response keeps it for its whole life,
    // and written with the first delimiter it would stay a rope of one piece per header (2 KB, not 0.9).
    response.flushHeaders();
    response.write(DELIMITER);
    if ('refused' in answer) {
      stream.write(part({ payload: { errors: answer.refused } }));
      return stream.finish();
    }
    streams.detach(stream, writeEach(connection.adopt(answer, requestId, 'rejection'), stream));
  });
}

/** Writes each answer as a part until the subscription or the connection ends, then finishes the body. */
async function writeEach(results: LiveResults, stream: StreamedResponse): Promise<void> {
  try {
    for (let next = await results.next(); !next.done; next = await results.next()) {
      if (!stream.write(answerPart(next.value))) break;
    }
  } catch (error) {
    if (!(error instanceof SubscriptionFailure)) throw error;
    stream.write(part({ payload: null, errors: error.errors }));
  } finally {
    await results.return();
    stream.finish();
  }
}

/** How the live connections end a multipart stream: one small object for each, rather than closures over the route's frame. */
class MultipartEnds implements ConnectionEnds {
  stream!: StreamedResponse;

  expired(connection: LiveConnection): void {
    connection.expireEach();
  }

  stopping(connection: LiveConnection): void {
    // Not yet subscribed: the door sees the server closing once it is, and completes the stream then.
    if (!connection.isIdle) connection.completeEach();
    else if (this.stream.response.headersSent) this.stream.finish();
  }

  cut(): void {
    this.stream.cut();
  }
}

function finish(response: ServerResponse): void {
  response.end(CLOSE);
}

/** The heartbeat: an empty part to every open stream. */
export function heartbeat(streams: StreamedResponses): void {
  const beat = part({});
  streams.each((stream) => stream.keepAlive(beat));
}
