import type { Caller } from './auth/authenticator.js';
import type { BillingService } from './billing/billing.service.js';
import type { ConversationService } from './conversations/conversation.service.js';
import type { SubscriptionService } from './subscriptions/subscription.service.js';

/** What every resolver sees: the caller and that caller's services, with fresh DataLoaders. */
export interface RequestContext {
  caller: Caller;
  conversations: ConversationService;
  billing: BillingService;
  /** Live updates (the Subscription fields). */
  subscriptions: SubscriptionService;
  /** The HTTP request's id, as in its log line and `X-Request-Id`; a subscription's own id over WebSocket. */
  requestId: string;
}

/** Builds the context of one request (service.ts assembles it from the domains). */
export type CreateContext = (caller: Caller, requestId: string) => RequestContext;
