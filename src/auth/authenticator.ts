import { decodeProtectedHeader } from 'jose';

import type { AccountStore } from '../accounts/account.store.js';
import { type Clock, systemClock } from '../clock.js';
import { VERIFIED_TOKENS_HELD } from '../limits.js';
import { type VerifiedToken, verifyAccessToken } from './access-token.js';
import { hashApiKey } from './api-key.js';
import { credentialOf } from './credential.js';
import type { ProviderTokens } from './provider-tokens.js';
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

/** Who signs the access tokens accepted: this gateway with its HS256 secret, an OpenID Connect provider, or both (a migration). */
export interface TokenIssuers {
  /** JWT_SECRET's key (or the process's random one); absent, no HS256 token is accepted. */
  secret?: Uint8Array;
  /** JWT_JWKS_URL's provider. */
  provider?: ProviderTokens;
}

/**
 * Turns an `Authorization` header (`Bearer <credential>` or the bare credential) into a caller:
 * the one authenticator of every door (REST, `/graphql`, WebSocket `connection_init`, Server-Sent
 * Events, multipart). An access token goes to the issuer its header's algorithm belongs to (HS256
 * to the secret, anything else to the provider), and each checks it with its own algorithms and
 * keys only, so the header never decides what a token is checked with.
 */
export class Authenticator {
  /** Access tokens verified before. API keys are not held: each is looked up, so that removing one refuses it at once. */
  readonly tokens: VerifiedTokens;

  constructor(
    issuers: TokenIssuers,
    private readonly accounts: AccountStore,
    private readonly clock: Clock = systemClock,
    tokensHeld = VERIFIED_TOKENS_HELD,
  ) {
    this.tokens = new VerifiedTokens((token, now) => verifyWith(issuers, token, now), tokensHeld);
  }

  /**
   * The caller, or null for refused credentials. Throws `credentialsUncheckable` (503) for a
   * provider's token whose key cannot be fetched right now.
   */
  async authenticate(authorization: string | undefined): Promise<Caller | null> {
    const credential = credentialOf(authorization);
    if (credential === null) return null;
    if (credential.kind === 'accessToken') return this.tokens.verify(credential.text, this.clock.now());
    const userId = await this.accounts.userIdForApiKeyHash(hashApiKey(credential.text));
    return userId === null ? null : { userId };
  }
}

async function verifyWith({ secret, provider }: TokenIssuers, token: string, now: number): Promise<VerifiedToken | null> {
  let algorithm: unknown;
  try {
    algorithm = decodeProtectedHeader(token).alg;
  } catch {
    return null;
  }
  if (algorithm === 'HS256') return secret === undefined ? null : verifyAccessToken(secret, token, now);
  return provider === undefined ? null : provider.verify(token, now);
}
