import type { AccountStore } from '../accounts/account.store.js';
import { subscriptionsUnavailable } from '../errors.js';
import { type BalanceChange, type BalanceEvent, balanceUpdates } from './balance-updates.js';
import type { ChangeFeed } from './change-feed.js';
import { type ConversationChange, conversationChanges } from './conversation-events.js';

/** This process's change feeds, or why there are none. */
export type Feeds =
  | { available: true; balances: ChangeFeed<BalanceChange>; conversations: ChangeFeed<ConversationChange> }
  | { available: false; reason: string };

/** One caller's live updates, built per subscription (and per event, like every context). */
export class SubscriptionService {
  constructor(
    private readonly feeds: Feeds,
    private readonly accounts: AccountStore,
    private readonly userId: number,
  ) {}

  balance(): Promise<AsyncIterableIterator<BalanceEvent>> {
    const feeds = this.available();
    return balanceUpdates(feeds.balances, this.accounts, this.userId);
  }

  conversationEvents(): Promise<AsyncIterableIterator<ConversationChange>> {
    const feeds = this.available();
    return conversationChanges(feeds.conversations, this.userId);
  }

  private available(): Extract<Feeds, { available: true }> {
    if (!this.feeds.available) throw subscriptionsUnavailable(this.feeds.reason);
    return this.feeds;
  }
}
