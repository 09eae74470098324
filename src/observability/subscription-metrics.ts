import { Counter, Gauge, type Metric } from 'prom-client';

import type { FeedObserver } from '../subscriptions/change-feed.js';
import type { SubscriptionTransport } from './labels.js';

/**
 * What the subscription doors, the pipeline's subscriptions and the change feeds report. Labels
 * are bounded: fields are the schema's Subscription fields (an operation that reaches them passed
 * validation), transports the three subscription doors, collections the two watched ones.
 */
export interface SubscriptionMetrics extends FeedObserver {
  /** Every subscription metric, for the gateway's registry. */
  readonly all: Metric[];
  websocketOpened(): void;
  websocketClosed(): void;
  /** An HTTP response that streams events (Server-Sent Events, multipart) opened or ended. */
  eventStreamOpened(transport: SubscriptionTransport): void;
  eventStreamClosed(transport: SubscriptionTransport): void;
  subscriptionStarted(field: string, transport: SubscriptionTransport): void;
  subscriptionEnded(field: string, transport: SubscriptionTransport): void;
  eventSent(field: string, transport: SubscriptionTransport): void;
  /** Open WebSockets and active subscriptions (every transport) right now (for `/readyz`). */
  counts(): { websockets: number; subscriptions: number };
}

export function subscriptionMetrics(): SubscriptionMetrics {
  const websockets = new Gauge({ name: 'graphql_websockets_open', help: 'Open GraphQL WebSocket connections', registers: [] });
  const eventStreams = new Gauge({
    name: 'graphql_event_streams_open',
    help: 'Open HTTP responses streaming subscription events, by transport (sse, multipart)',
    labelNames: ['transport'] as const,
    registers: [],
  });
  const subscriptions = new Gauge({
    name: 'graphql_subscriptions_active',
    help: 'Subscriptions running, by Subscription field and transport',
    labelNames: ['field', 'transport'] as const,
    registers: [],
  });
  const events = new Counter({
    name: 'graphql_subscription_events_total',
    help: 'Events sent to subscribers, by Subscription field and transport',
    labelNames: ['field', 'transport'] as const,
    registers: [],
  });
  const changeStreams = new Gauge({
    name: 'mongodb_change_streams_open',
    help: 'Change streams open, by collection (one per collection while it has subscribers)',
    labelNames: ['collection'] as const,
    registers: [],
  });
  const restarts = new Counter({
    name: 'mongodb_change_stream_restarts_total',
    help: 'Change streams opened again after a cut: resumed="true" from their last change, "false" from now (history lost)',
    labelNames: ['collection', 'resumed'] as const,
    registers: [],
  });
  const open = { websockets: 0, subscriptions: 0 };
  return {
    all: [websockets, eventStreams, subscriptions, events, changeStreams, restarts],
    websocketOpened() {
      open.websockets += 1;
      websockets.inc();
    },
    websocketClosed() {
      open.websockets -= 1;
      websockets.dec();
    },
    eventStreamOpened: (transport) => eventStreams.inc({ transport }),
    eventStreamClosed: (transport) => eventStreams.dec({ transport }),
    subscriptionStarted(field, transport) {
      open.subscriptions += 1;
      subscriptions.inc({ field, transport });
    },
    subscriptionEnded(field, transport) {
      open.subscriptions -= 1;
      subscriptions.dec({ field, transport });
    },
    eventSent: (field, transport) => events.inc({ field, transport }),
    streamOpened: (collection) => changeStreams.inc({ collection }),
    streamClosed: (collection) => changeStreams.dec({ collection }),
    streamRestarted: (collection, resumed) => restarts.inc({ collection, resumed: String(resumed) }),
    counts: () => ({ ...open }),
  };
}
