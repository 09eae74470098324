import { type Connection, type Model, Schema } from 'mongoose';

import type { Gift } from '../billing/gift.js';
import { microsFromLegacyUnits } from './points.js';

export interface UserRecord {
  /** Numeric user id, the `sub` of access tokens. */
  id: number;
  username: string;
  /** Balance in micro-points, millionths of a point (see points.ts): what this service writes. */
  balanceMicros: number;
  /**
   * Balance in ten-thousandths of a point, as versions before micro-points stored it and writers
   * of that time (the chat service charging a chat) may still write it. The balance is the sum of
   * both fields (`balanceMicrosOf`), so such a writer needs no change and loses nothing.
   */
  balanceUnits?: number;
  /** Highest conversation id ever given to this user; ids are never reused. */
  lastConversationId: number;
  /**
   * Order ids of this user's purchases that are paid for or may still be, but not credited yet.
   * Crediting removes the order in the same single-document update, so it happens at most once.
   */
  pendingOrders?: string[];
  /** Gift packages already credited to this user; each is credited at most once. */
  grantedGifts?: Gift[];
  /** Orders credited after they had been declined (the provider said paid later): each is credited at most once. */
  lateCredits?: string[];
}

export type UserModel = Model<UserRecord>;

/** The collection users are stored in: their balances' change stream watches it. */
export const USERS_COLLECTION = 'users';

/** A balance as stored: what this service wrote, and what writers of the old unit wrote beside it (both in micro-points). */
export interface StoredBalance {
  micros: number;
  legacyMicros: number;
}

/**
 * The field of a user document each part of the balance is stored in: `balanceMicros`, and
 * `balanceUnits` of older writers. The balance's change stream matches and reads these names, so
 * a renamed field renames what it watches.
 */
export const BALANCE_FIELD_NAMES = { micros: 'balanceMicros', legacyMicros: 'balanceUnits' } as const satisfies Record<
  keyof StoredBalance,
  keyof UserRecord
>;

export type BalanceFieldName = (typeof BALANCE_FIELD_NAMES)[keyof StoredBalance];

/** The balance's parts, in the order of `BALANCE_FIELD_NAMES`. */
export const BALANCE_PARTS = Object.keys(BALANCE_FIELD_NAMES) as (keyof StoredBalance)[];

const userSchema = new Schema<UserRecord>(
  {
    id: { type: Number, required: true },
    username: { type: String, required: true },
    balanceMicros: { type: Number, required: true, default: 0 },
    balanceUnits: { type: Number, default: undefined },
    lastConversationId: { type: Number, required: true, default: 0 },
    pendingOrders: { type: [String], default: undefined },
    grantedGifts: { type: [String], default: undefined },
    lateCredits: { type: [String], default: undefined },
  },
  { collection: USERS_COLLECTION, timestamps: true, versionKey: false },
);
userSchema.index({ id: 1 }, { unique: true });
userSchema.index({ username: 1 }, { unique: true });

/**
 * One part of a stored balance, in micro-points, from the value its field holds: `balanceMicros` as
 * it is, the legacy ten-thousandths converted (`legacyMicros`); a field absent (or removed) counts 0.
 */
export function storedBalancePart(part: keyof StoredBalance, value: unknown): number {
  return part === 'micros' ? ((value ?? 0) as number) : legacyMicros(value);
}

/** The balance a user document holds (or the fields a write set, read alike): each part from its own field. */
export function storedBalanceOf(fields: Partial<Record<BalanceFieldName, unknown>> | null | undefined): StoredBalance {
  return {
    micros: storedBalancePart('micros', fields?.[BALANCE_FIELD_NAMES.micros]),
    legacyMicros: storedBalancePart('legacyMicros', fields?.[BALANCE_FIELD_NAMES.legacyMicros]),
  };
}

/** The balance is the sum of its parts. */
export const totalMicros = ({ micros, legacyMicros }: StoredBalance): number => micros + legacyMicros;

/** A user's balance in micro-points: `balanceMicros` plus the legacy ten-thousandths (each field absent counts 0). */
export function balanceMicrosOf(user: Pick<UserRecord, BalanceFieldName> | null | undefined): number {
  return totalMicros(storedBalanceOf(user));
}

/** Ten-thousandths of a point as micro-points; 0 for anything that is not a number (nothing this service could have written). */
export function legacyMicros(units: unknown): number {
  if (typeof units !== 'number') return 0;
  // The whole numbers this unit always held, at once; anything else exactly, through its decimal text.
  return Number.isSafeInteger(units * 100) ? units * 100 : (microsFromLegacyUnits(units) ?? 0);
}

/** The fields a read of the balance needs, as a projection. */
export const BALANCE_FIELDS = { [BALANCE_FIELD_NAMES.micros]: 1, [BALANCE_FIELD_NAMES.legacyMicros]: 1 } as const;

export function userModel(connection: Connection): UserModel {
  return connection.model<UserRecord>('User', userSchema);
}
