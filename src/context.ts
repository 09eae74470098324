import type { Caller } from './auth/authenticator.js';
import type { BillingService } from './billing/billing.service.js';
import type { ConversationService } from './conversations/conversation.service.js';
import type { Observation } from './operations/observer.js';
import type { OperationContext } from './operations/operation-context.js';
import type { ResponseBudget } from './operations/response-budget.js';
import type { SubscriptionService } from './subscriptions/subscription.service.js';

/** Each domain's service for one caller (service.ts assembles them). */
export interface CallerServices {
  /** Conversations hand stored text to the answer: they charge it to the request's budget. */
  conversations(caller: Caller, budget: ResponseBudget): ConversationService;
  billing(caller: Caller): BillingService;
  subscriptions(caller: Caller): SubscriptionService;
}

/**
 * What every resolver sees: the caller and that caller's services, with fresh DataLoaders, and
 * what the answer may still carry. A service is made when a resolver first asks for it, so that a
 * request pays only for those it uses. The pipeline sees only its `OperationContext` part.
 */
export class RequestContext implements OperationContext {
  private conversationService: ConversationService | undefined;
  private billingService: BillingService | undefined;
  private subscriptionService: SubscriptionService | undefined;

  constructor(
    readonly caller: Caller,
    /** The HTTP request's id, as in its log line and `X-Request-Id`; a subscription's own id over WebSocket. */
    readonly requestId: string,
    /** The operation this context serves, as the pipeline observes it. */
    readonly observation: Observation,
    /** The bytes of stored text its answer may carry (RESPONSE_MAX_BYTES), charged as they are produced. */
    readonly budget: ResponseBudget,
    private readonly services: CallerServices,
  ) {}

  /**
   * The context of one operation of a batch: the same caller and request, and the same response
   * budget (the batch's answer is one answer, bounded as a whole), with its own observation and services.
   */
  forOperation(observation: Observation): RequestContext {
    return new RequestContext(this.caller, this.requestId, observation, this.budget, this.services);
  }

  get conversations(): ConversationService {
    return (this.conversationService ??= this.services.conversations(this.caller, this.budget));
  }

  get billing(): BillingService {
    return (this.billingService ??= this.services.billing(this.caller));
  }

  /** Live updates (the Subscription fields). */
  get subscriptions(): SubscriptionService {
    return (this.subscriptionService ??= this.services.subscriptions(this.caller));
  }
}

/** Builds the context of one request, or of one subscription event. */
export type CreateContext = (caller: Caller, requestId: string, observation: Observation) => RequestContext;
