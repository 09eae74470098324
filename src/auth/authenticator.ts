import type { AccountStore } from '../accounts/account.store.js';
import { type Clock, systemClock } from '../clock.js';
import { VERIFIED_TOKENS_HELD } from '../limits.js';
import { API_KEY_PREFIX, hashApiKey } from './api-key.js';
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

/** Tokens and keys are printable ASCII without spaces; anything else is refused before any lookup. */
const CREDENTIAL_PATTERN = /^[\x21-\x7e]{1,4096}$/;

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
    if (!credential.startsWith(API_KEY_PREFIX)) return this.tokens.verify(credential, this.clock.now());
    const userId = await this.accounts.userIdForApiKeyHash(hashApiKey(credential));
    return userId === null ? null : { userId };
  }
}

function credentialOf(authorization: string | undefined): string | null {
  if (authorization === undefined) return null;
  const value = authorization.trim();
  const credential = /^bearer\s/i.test(value) ? value.slice(7).trim() : value;
  return CREDENTIAL_PATTERN.test(credential) ? credential : null;
}
