import type { AccountStore } from './accounts/account.store.js';
import type { Caller } from './auth/authenticator.js';
import { BillingService } from './billing/billing.service.js';
import type { OfficialBilling } from './billing/official-billing.js';
import { ConversationService } from './conversations/conversation.service.js';
import type { ConversationStore } from './conversations/conversation.store.js';

/** The data access every deployment has. */
export interface Stores {
  accounts: AccountStore;
  conversations: ConversationStore;
}

/** Long-lived collaborators shared by every request. */
export interface AppServices {
  stores: Stores;
  /** Buying and the gift package through the SSO provider; present on the official deployment only. */
  officialBilling: OfficialBilling | undefined;
}

/** What every resolver sees: the caller and that caller's services, with fresh DataLoaders. */
export interface RequestContext {
  caller: Caller;
  conversations: ConversationService;
  billing: BillingService;
  /** The HTTP request's id (as in the log), for `/graphql`; the REST layer reports its own. */
  requestId: string | undefined;
}

export function createRequestContext({ stores, officialBilling }: AppServices, caller: Caller, requestId?: string): RequestContext {
  return {
    caller,
    requestId,
    conversations: new ConversationService(stores.conversations, caller.userId),
    billing: new BillingService(stores.accounts, caller.userId, officialBilling),
  };
}
