import { Counter, Gauge, type Metric } from 'prom-client';

import type { FeedObserver } from './change-feed.js';

/**
 * What the WebSocket server and the change feeds report. Labels are bounded: fields are the
 * schema's Subscription fields (an operation that reaches them passed validation), collections
 * the two watched ones.
 */
export interface SubscriptionMetrics extends FeedObserver {
  /** Every subscription metric, for the gateway's registry. */
  readonly all: Metric[];
  websocketOpened(): void;
  websocketClosed(): void;
  subscriptionStarted(field: string): void;
  subscriptionEnded(field: string): void;
  eventSent(field: string): void;
  /** Open WebSockets and active subscriptions right now (for `/readyz`). */
  counts(): { websockets: number; subscriptions: number };
}

export function subscriptionMetrics(): SubscriptionMetrics {
  const websockets = new Gauge({ name: 'graphql_websockets_open', help: 'Open GraphQL WebSocket connections', registers: [] });
  const subscriptions = new Gauge({
    name: 'graphql_subscriptions_active',
    help: 'Subscriptions running, by Subscription field',
    labelNames: ['field'] as const,
    registers: [],
  });
  const events = new Counter({
    name: 'graphql_subscription_events_total',
    help: 'Events sent to subscribers, by Subscription field',
    labelNames: ['field'] as const,
    registers: [],
  });
  const streams = new Gauge({
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
    all: [websockets, subscriptions, events, streams, restarts],
    websocketOpened() {
      open.websockets += 1;
      websockets.inc();
    },
    websocketClosed() {
      open.websockets -= 1;
      websockets.dec();
    },
    subscriptionStarted(field) {
      open.subscriptions += 1;
      subscriptions.inc({ field });
    },
    subscriptionEnded(field) {
      open.subscriptions -= 1;
      subscriptions.dec({ field });
    },
    eventSent: (field) => events.inc({ field }),
    streamOpened: (collection) => streams.inc({ collection }),
    streamClosed: (collection) => streams.dec({ collection }),
    streamRestarted: (collection, resumed) => restarts.inc({ collection, resumed: String(resumed) }),
    counts: () => ({ ...open }),
  };
}
