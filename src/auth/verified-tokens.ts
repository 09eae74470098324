import { LRUCache } from 'lru-cache';

import { type VerifiedToken, verifyAccessToken } from './access-token.js';

interface Entry {
  token: VerifiedToken;
  /** When the signature and claims were checked: a clock set back before it checks them again (`nbf`). */
  verifiedAt: number;
}

/**
 * Access tokens already verified, so that a caller's next requests skip the signature check
 * (most of what authenticating a request costs). An entry answers only while the clock is between
 * its verification and the token's `exp` (with the tolerance); outside that the token is verified
 * again, which refuses it when it must be. The key never changes while the process runs, so a
 * verified token stays valid until it expires. Bounded: the least recently used go first.
 */
export class VerifiedTokens {
  private readonly entries: LRUCache<string, Entry>;

  constructor(
    private readonly key: Uint8Array,
    capacity: number,
  ) {
    this.entries = new LRUCache({ max: capacity });
  }

  /** The token's user, or null when it is refused, judged at `now` (ms since the epoch). */
  async verify(token: string, now: number): Promise<VerifiedToken | null> {
    const entry = this.entries.get(token);
    if (entry !== undefined && now >= entry.verifiedAt && (entry.token.acceptedUntil === undefined || now < entry.token.acceptedUntil)) {
      return entry.token;
    }
    const verified = await verifyAccessToken(this.key, token, now);
    if (verified === null) this.entries.delete(token);
    else this.entries.set(token, { token: verified, verifiedAt: now });
    return verified;
  }

  /** How many tokens are held. */
  get size(): number {
    return this.entries.size;
  }
}
