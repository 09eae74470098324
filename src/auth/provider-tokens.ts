import {
  createLocalJWKSet,
  createRemoteJWKSet,
  type CryptoKey,
  errors,
  type FlattenedJWSInput,
  type JWSHeaderParameters,
  jwtVerify,
  type JWTVerifyOptions,
  type KeyObject,
} from 'jose';

import type { TokenProviderConfig } from '../config.js';
import { credentialsUncheckable } from '../errors.js';
import type { Logger } from '../logger.js';
import { CLOCK_TOLERANCE_SECONDS, userIdOfClaim, type VerifiedToken, verifiedToken } from './access-token.js';

/**
 * The algorithms a provider's token may be signed with. Which one a token is checked with is
 * decided by its key (jose picks the key set's entry by `kid`, by the key's own `alg` when it has
 * one and by the key's type otherwise, and refuses a header that names another algorithm); `none`
 * and HS* are never among them, so a token signed with a public key as an HMAC secret is refused.
 */
const PROVIDER_ALGORITHMS = ['RS256', 'PS256', 'ES256', 'EdDSA'];

export interface ProviderKeyTimings {
  /** After a fetch of the key set, or a failed attempt, the least time before the next one (an unknown `kid` asks for one). */
  cooldownMs: number;
  /** The longest one fetch of the key set may take. */
  timeoutMs: number;
}

/** An unknown `kid` refetches the set at most once every 5 s; a provider that does not answer in 5 s counts as unreachable. */
export const PROVIDER_KEY_TIMINGS: ProviderKeyTimings = { cooldownMs: 5_000, timeoutMs: 5_000 };

type KeyOf = (header: JWSHeaderParameters, token: FlattenedJWSInput) => Promise<CryptoKey | KeyObject>;

/** What jose answers when the key set was read but holds no key for the token: the token's fault, not the provider's. */
function isRefusedKey(error: unknown): boolean {
  return (
    error instanceof errors.JWKSNoMatchingKey ||
    error instanceof errors.JWKSMultipleMatchingKeys ||
    error instanceof errors.JOSENotSupported
  );
}

/**
 * Access tokens of an OpenID Connect provider, verified against its JSON Web Key Set (`jwks_uri`)
 * with jose's remote key set: fetched on first use, held, refetched when a token names a `kid` it
 * does not hold (at most once per cooldown: a rotated key works without a restart) and when the
 * held copy is older than jose's `cacheMaxAge`.
 *
 * While the provider cannot be reached, the keys last fetched keep verifying tokens; a token whose
 * key is not among them cannot be checked, and is answered as such (503, `credentialsUncheckable`),
 * not refused: it may well be valid. A failed fetch is logged, and not tried again before the
 * cooldown has passed.
 */
export class ProviderTokens {
  private readonly remote: ReturnType<typeof createRemoteJWKSet>;
  private readonly options: JWTVerifyOptions;
  /** When the last fetch of the key set failed (the clock's ms), while no later one succeeded. */
  private failedAt: number | undefined;

  constructor(
    private readonly config: TokenProviderConfig,
    private readonly logger: Logger,
    private readonly timings: ProviderKeyTimings = PROVIDER_KEY_TIMINGS,
  ) {
    this.remote = createRemoteJWKSet(new URL(config.jwksUrl), {
      cooldownDuration: timings.cooldownMs,
      timeoutDuration: timings.timeoutMs,
    });
    this.options = {
      algorithms: PROVIDER_ALGORITHMS,
      requiredClaims: ['exp'],
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
      ...(config.issuer !== undefined && { issuer: config.issuer }),
      ...(config.audience !== undefined && { audience: config.audience }),
    };
  }

  /** The token's user, or null when it is refused; throws `credentialsUncheckable` when its key cannot be fetched. */
  async verify(token: string, now: number): Promise<VerifiedToken | null> {
    let payload;
    try {
      ({ payload } = await jwtVerify(token, this.keyOf(now), { ...this.options, currentDate: new Date(now) }));
    } catch (error) {
      if (error instanceof KeysUnreachable) throw credentialsUncheckable(Math.max(1, Math.ceil(this.timings.cooldownMs / 1000)));
      return null;
    }
    const userId = userIdOfClaim(payload[this.config.userClaim]);
    return userId === null ? null : verifiedToken(userId, payload.exp);
  }

  /** The key a token names: from the remote set, or from the keys last fetched while the provider cannot be reached. */
  private keyOf(now: number): KeyOf {
    return async (header, token) => {
      if (this.failedAt !== undefined && now < this.failedAt + this.timings.cooldownMs) return this.heldKey(header, token);
      try {
        const key = await this.remote(header, token);
        this.failedAt = undefined;
        return key;
      } catch (error) {
        if (isRefusedKey(error)) throw error;
        this.failedAt = now;
        this.logger.warn(
          { err: error, jwksUrl: this.config.jwksUrl },
          "the identity provider's key set (JWT_JWKS_URL) cannot be fetched: tokens of the keys held keep working, others are answered 503",
        );
        return this.heldKey(header, token);
      }
    };
  }

  private async heldKey(header: JWSHeaderParameters, token: FlattenedJWSInput): Promise<CryptoKey | KeyObject> {
    const held = this.remote.jwks();
    if (held === undefined) throw new KeysUnreachable();
    try {
      return await createLocalJWKSet(held)(header, token);
    } catch (error) {
      if (error instanceof errors.JWKSNoMatchingKey) throw new KeysUnreachable();
      throw error;
    }
  }
}

/** The key a token names is not held, and the key set cannot be fetched. */
class KeysUnreachable extends Error {
  constructor() {
    super("the identity provider's key set cannot be fetched");
  }
}
