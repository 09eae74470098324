import type { Clock } from '../clock.js';
import type { CallerLocals } from '../http/authenticated.js';
import type { StepAfter } from '../http/locals.js';
import type { Logger } from '../logger.js';
import type { SubscriptionMetrics } from '../observability/subscription-metrics.js';
import type { OperationPipeline } from '../operations/pipeline.js';
import { heartbeat, HEARTBEAT_MS, multipartSubscriptions } from './multipart.js';
import { serverSentEvents, type ServerSentEventsDoor } from './server-sent-events.js';
import { StreamedResponses } from './streamed-responses.js';

export interface HttpStreamsOptions {
  pipeline: OperationPipeline;
  /** What the server may hold unsent for one streaming response before it drops the connection. */
  maxBufferedBytes: number;
  clock: Clock;
  metrics: SubscriptionMetrics;
  logger: Logger;
}

/** The two HTTP subscription doors: Server-Sent Events (graphql-sse) and Apollo's multipart subscriptions. */
export interface HttpStreams {
  sse: ServerSentEventsDoor;
  /** A step of `POST /graphql`'s route, behind authentication (see `multipartSubscriptions`). */
  multipart: StepAfter<CallerLocals>;
  /** Stops the heartbeat and the reservations' timers; the pipeline's `LiveConnections` completes every stream. */
  close(): void;
}

export function createHttpStreams({ pipeline, maxBufferedBytes, clock, metrics, logger }: HttpStreamsOptions): HttpStreams {
  const streamsOf = (transport: 'sse' | 'multipart') => new StreamedResponses({ transport, maxBufferedBytes, metrics, logger });
  const sseStreams = streamsOf('sse');
  const multipartStreams = streamsOf('multipart');
  const sse = serverSentEvents(pipeline, sseStreams, clock);
  // One beat for every multipart stream, as for the WebSockets.
  const beat = setInterval(() => heartbeat(multipartStreams), HEARTBEAT_MS).unref();
  return {
    sse,
    multipart: multipartSubscriptions(pipeline, multipartStreams),
    close() {
      clearInterval(beat);
      sse.close();
    },
  };
}
