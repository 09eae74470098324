import type { AccountStore } from '../accounts/account.store.js';
import { type Clock, systemClock } from '../clock.js';
import { VERIFIED_TOKENS_HELD } from '../limits.js';
import { hashApiKey } from './api-key.js';
import { credentialOf } from './credential.js';
import { VerifiedTokens } from './verified-tokens.js';

export interface Caller {
  userId: number;
  /**
   * When the credential stops being accepted (ms since the epoch): an access token's `exp`
   * (with the clock tolerance). Absent for API keys and tokens without `exp`. A WebSocket
   * authenticated with it is closed then.
   */
  acceptedUntil?: number;
}

/** Turns an `Authorization` header (`Bearer <credential>` or the bare credential) into a caller. */
export class Authenticator {
  /** Access tokens verified before. API keys are not held: each is looked up, so that removing one refuses it at once. */
  readonly tokens: VerifiedTokens;

  constructor(
    key: Uint8Array,
    private readonly accounts: AccountStore,
    private readonly clock: Clock = systemClock,
    tokensHeld = VERIFIED_TOKENS_HELD,
  ) {
    this.tokens = new VerifiedTokens(key, tokensHeld);
  }

  /** The caller, or null for refused credentials. */
  async authenticate(authorization: string | undefined): Promise<Caller | null> {
    const credential = credentialOf(authorization);
    if (credential === null) return null;
    if (credential.kind === 'accessToken') return this.tokens.verify(credential.text, this.clock.now());
    const userId = await this.accounts.userIdForApiKeyHash(hashApiKey(credential.text));
    return userId === null ? null : { userId };
  }
}
