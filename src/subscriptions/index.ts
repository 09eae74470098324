import type { Connection } from 'mongoose';

import type { AccountStore } from '../accounts/account.store.js';
import { USERS_COLLECTION } from '../accounts/index.js';
import type { Caller } from '../auth/authenticator.js';
import { CONVERSATIONS_COLLECTION } from '../conversations/index.js';
import type { Logger } from '../logger.js';
import { subscriptionMetrics } from '../observability/subscription-metrics.js';
import { balanceFeed } from './balance-updates.js';
import { conversationFeed, enablePreImages } from './conversation-events.js';
import { subscriptionResolvers } from './subscription.resolvers.js';
import { type Feeds, SubscriptionService } from './subscription.service.js';

export interface SubscriptionsOptions {
  connection: Connection;
  accounts: AccountStore;
  logger: Logger;
}

/** MongoDB 6.0's wire version: the first with pre-images in change streams. */
const WIRE_VERSION_6_0 = 17;

/**
 * Live updates: one change feed per collection for the process, a service per caller and the
 * Subscription resolvers. On a database without change streams (a standalone server, or older
 * than 6.0) there are no feeds, subscribing answers SUBSCRIPTIONS_UNAVAILABLE with the reason,
 * and everything else works.
 */
export async function createSubscriptions({ connection, accounts, logger }: SubscriptionsOptions) {
  const db = connection.db!;
  const metrics = subscriptionMetrics();
  // The collections whose changes are sent, as each domain names them: balances live on users.
  const users = USERS_COLLECTION;
  const conversations = CONVERSATIONS_COLLECTION;
  const reason = await changeStreamsUnavailable(connection, conversations);
  const feeds: Feeds =
    reason === undefined
      ? {
          available: true,
          balances: balanceFeed(db, users, logger, metrics),
          conversations: conversationFeed(db, conversations, logger, metrics),
        }
      : { available: false, reason };
  return {
    /** Whether subscriptions are served here, and if not, why. */
    availability: feeds.available ? ({ available: true } as const) : ({ available: false, reason: feeds.reason } as const),
    resolvers: subscriptionResolvers,
    /** Connections, subscriptions, events and change streams: counted here, registered by the gateway's metrics. */
    metrics,
    forCaller: (caller: Caller) => new SubscriptionService(feeds, accounts, caller.userId),
    /** Closes the change streams; subscribers get nothing more. */
    async close() {
      if (feeds.available) await Promise.all([feeds.balances.close(), feeds.conversations.close()]);
    },
  };
}

export type Subscriptions = Awaited<ReturnType<typeof createSubscriptions>>;

/** Why this database cannot feed subscriptions, or undefined when it can (then pre-images are on). */
async function changeStreamsUnavailable(connection: Connection, conversations: string): Promise<string | undefined> {
  const db = connection.db!;
  const hello = await db.admin().command({ hello: 1 });
  if (hello.setName === undefined && hello.msg !== 'isdbgrid') {
    return 'the database is a standalone MongoDB server; change streams need a replica set or a sharded cluster (a one-member replica set will do)';
  }
  if (typeof hello.maxWireVersion !== 'number' || hello.maxWireVersion < WIRE_VERSION_6_0) {
    return 'MongoDB 6.0 or later is needed (its change streams name the owner of a deleted conversation)';
  }
  try {
    await enablePreImages(db, conversations);
  } catch (error) {
    return `pre-images could not be turned on for the ${conversations} collection (${(error as Error).message})`;
  }
  return undefined;
}
