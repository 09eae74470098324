import type { Document } from 'bson';

import { CommandError, ErrorCode } from './errors.js';
import { formatValue } from './values.js';

interface SessionState {
  txnNumber: bigint;
  /** The reply of that write, answered again when the driver retries it. */
  reply: Document;
  lastUsed: number;
}

/** Sessions idle longer than logicalSessionTimeoutMinutes are forgotten, as mongod does. */
const SESSION_TIMEOUT_MS = 30 * 60 * 1000;

/**
 * Retryable writes: a replica set member remembers, per session, the highest
 * transaction number it executed and that write's reply, so that a write the
 * driver retries (after a lost connection) is answered again instead of being
 * applied twice.
 */
export class RetryableWrites {
  private readonly sessions = new Map<string, SessionState>();

  /** The stored reply when this is a retry; throws when a newer write already ran on the session. */
  previousReply(lsid: Document, txnNumber: bigint, now: number): Document | undefined {
    this.forgetIdle(now);
    const state = this.sessions.get(sessionKey(lsid));
    if (!state) return undefined;
    if (state.txnNumber > txnNumber) {
      throw new CommandError(
        ErrorCode.TransactionTooOld,
        `Retryable write with txnNumber ${txnNumber} is prohibited on session ${formatValue(lsid.id)} because a newer retryable write with txnNumber ${state.txnNumber} has already started on this session.`,
      );
    }
    return state.txnNumber === txnNumber ? state.reply : undefined;
  }

  record(lsid: Document, txnNumber: bigint, reply: Document, now: number): void {
    const key = sessionKey(lsid);
    this.sessions.delete(key);
    this.sessions.set(key, { txnNumber, reply, lastUsed: now });
  }

  private forgetIdle(now: number): void {
    // Map order is least recently used first.
    for (const [key, state] of this.sessions) {
      if (now - state.lastUsed < SESSION_TIMEOUT_MS) break;
      this.sessions.delete(key);
    }
  }
}

function sessionKey(lsid: Document): string {
  const id = lsid.id as { toHexString?: () => string } | undefined;
  return `${id?.toHexString?.() ?? formatValue(lsid.id)}/${formatValue(lsid.uid ?? null)}`;
}
