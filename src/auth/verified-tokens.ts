import { LRUCache } from 'lru-cache';

import type { VerifiedToken, VerifyToken } from './access-token.js';

interface Entry {
  token: VerifiedToken;
  /** When the signature and claims were checked: a clock set back before it checks them again (`nbf`). */
  verifiedAt: number;
}

/**
 * Access tokens already verified, so that a caller's next requests skip the signature check
 * (most of what authenticating a request costs). An entry answers only while the clock is between
 * its verification and the token's `exp` (with the tolerance); outside that the token is verified
 * again, which refuses it when it must be. A verified token stays valid until it expires, even if
 * its provider has since rotated its key out of the key set. Bounded: the least recently used go first.
 */
export class VerifiedTokens {
  private readonly entries: LRUCache<string, Entry>;

  constructor(
    private readonly check: VerifyToken,
    capacity: number,
  ) {
    this.entries = new LRUCache({ max: capacity });
  }

  /** The token's user, or null when it is refused, judged at `now` (ms since the epoch); what `check` throws, it throws. */
  async verify(token: string, now: number): Promise<VerifiedToken | null> {
    const entry = this.entries.get(token);
    if (entry !== undefined && now >= entry.verifiedAt && (entry.token.acceptedUntil === undefined || now < entry.token.acceptedUntil)) {
      return entry.token;
    }
    const verified = await this.check(token, now);
    if (verified === null) this.entries.delete(token);
    else this.entries.set(token, { token: verified, verifiedAt: now });
    return verified;
  }

  /** How many tokens are held. */
  get size(): number {
    return this.entries.size;
  }
}
