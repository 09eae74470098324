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
  /** The tally of events sent to the subscriptions of one field over one transport (see `EventTally`). */
  eventsSent(field: string, transport: SubscriptionTransport): EventTally;
  /** Open WebSockets and active subscriptions (every transport) right now (for `/readyz`). */
  counts(): { websockets: number; subscriptions: number };
}

/**
 * Events sent to the subscriptions of one Subscription field over one transport, counted in
 * place: one event reaches thousands of subscribers at once, and a labelled counter's `inc`
 * would build its labels' key for each of them. The counter takes the tallies when it is
 * collected (prom-client's `collect` hook), so a scrape reads the same totals.
 */
export interface EventTally {
  sent: number;
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
  const tallies = new Map<string, { labels: { field: string; transport: SubscriptionTransport }; tally: EventTally; counted: number }>();
  const events = new Counter({
    name: 'graphql_subscription_events_total',
    help: 'Events sent to subscribers, by Subscription field and transport',
    labelNames: ['field', 'transport'] as const,
    registers: [],
    collect() {
      for (const entry of tallies.values()) {
        if (entry.tally.sent === entry.counted) continue;
        this.inc(entry.labels, entry.tally.sent - entry.counted);
        entry.counted = entry.tally.sent;
      }
    },
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
    eventsSent(field, transport) {
      const key = `${field} ${transport}`;
      let entry = tallies.get(key);
      if (entry === undefined) tallies.set(key, (entry = { labels: { field, transport }, tally: { sent: 0 }, counted: 0 }));
      return entry.tally;
    },
    streamOpened: (collection) => changeStreams.inc({ collection }),
    streamClosed: (collection) => changeStreams.dec({ collection }),
    streamRestarted: (collection, resumed) => restarts.inc({ collection, resumed: String(resumed) }),
    counts: () => ({ ...open }),
  };
}
