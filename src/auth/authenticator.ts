import type { AccountStore } from '../accounts/account.store.js';
import { API_KEY_PREFIX, hashApiKey } from './api-key.js';
import { verifyAccessToken } from './access-token.js';

export interface Caller {
  userId: number;
}

/** Tokens and keys are printable ASCII without spaces; anything else is refused before any lookup. */
const CREDENTIAL_PATTERN = /^[\x21-\x7e]{1,4096}$/;

/** Runs for every authenticated caller before anything is read for them; refuses by throwing (the rate limit). */
export type AdmitCaller = (caller: Caller) => Promise<void>;

/** Turns an `Authorization` header (`Bearer <credential>` or the bare credential) into a caller. */
export class Authenticator {
  constructor(
    private readonly key: Uint8Array,
    private readonly accounts: AccountStore,
    private readonly admit: AdmitCaller = async () => {},
  ) {}

  /** The caller, or null for refused credentials; throws what `admit` throws. */
  async authenticate(authorization: string | undefined): Promise<Caller | null> {
    const credential = credentialOf(authorization);
    if (credential === null) return null;
    const userId = credential.startsWith(API_KEY_PREFIX)
      ? await this.accounts.userIdForApiKeyHash(hashApiKey(credential))
      : await verifyAccessToken(this.key, credential);
    if (userId === null) return null;
    const caller = { userId };
    await this.admit(caller);
    return caller;
  }
}

function credentialOf(authorization: string | undefined): string | null {
  if (authorization === undefined) return null;
  const value = authorization.trim();
  const credential = /^bearer\s/i.test(value) ? value.slice(7).trim() : value;
  return CREDENTIAL_PATTERN.test(credential) ? credential : null;
}
