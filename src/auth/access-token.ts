import { jwtVerify, SignJWT } from 'jose';

const ALGORITHM = 'HS256';
/** Tolerated difference between our clock and the issuer's, for `exp` and `nbf`. */
export const CLOCK_TOLERANCE_SECONDS = 30;
/** A positive decimal integer with no sign, no leading zero and no padding. */
const USER_ID_PATTERN = /^[1-9][0-9]{0,15}$/;

export function secretKey(secret: string): Uint8Array {
  return new TextEncoder().encode(secret);
}

export async function signAccessToken(key: Uint8Array, userId: number, expiresIn = '24h'): Promise<string> {
  return new SignJWT({})
    .setProtectedHeader({ alg: ALGORITHM, typ: 'JWT' })
    .setSubject(String(userId))
    .setIssuedAt()
    .setExpirationTime(expiresIn)
    .sign(key);
}

/** Whether jose understands `span` as a token lifetime, such as "30m", "24h" or "7 days". */
export function isTokenLifetime(span: string): boolean {
  try {
    new SignJWT({}).setExpirationTime(span);
    return true;
  } catch {
    return false;
  }
}

export interface VerifiedToken {
  userId: number;
  /** When the token stops being accepted (its `exp` plus the clock tolerance), in ms since the epoch; absent without `exp`. */
  acceptedUntil?: number;
}

/** Checks an access token's signature and claims at `now` (ms since the epoch): its user, or null when refused. */
export type VerifyToken = (token: string, now: number) => Promise<VerifiedToken | null>;

/** A user id as a token's claim gives it: a positive decimal integer, as a string (no sign, padding or leading zero) or a number. */
export function userIdOfClaim(claim: unknown): number | null {
  const userId = typeof claim === 'string' && USER_ID_PATTERN.test(claim) ? Number(claim) : claim;
  return typeof userId === 'number' && Number.isSafeInteger(userId) && userId > 0 ? userId : null;
}

/** What a verified token with this user and `exp` (seconds since the epoch, if any) stands for. */
export function verifiedToken(userId: number, exp: number | undefined): VerifiedToken {
  return exp === undefined ? { userId } : { userId, acceptedUntil: (exp + CLOCK_TOLERANCE_SECONDS) * 1000 };
}

/**
 * The user of a valid token, or null for anything else (bad signature, other algorithm, expired,
 * bad `sub`), judged at `now` (ms since the epoch).
 */
export async function verifyAccessToken(key: Uint8Array, token: string, now = Date.now()): Promise<VerifiedToken | null> {
  try {
    const { payload } = await jwtVerify(token, key, {
      algorithms: [ALGORITHM],
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
      currentDate: new Date(now),
    });
    // Our own tokens carry `sub` as a string.
    const userId = typeof payload.sub === 'string' ? userIdOfClaim(payload.sub) : null;
    return userId === null ? null : verifiedToken(userId, payload.exp);
  } catch {
    return null;
  }
}
