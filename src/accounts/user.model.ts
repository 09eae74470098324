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
  { collection: 'users', timestamps: true, versionKey: false },
);
userSchema.index({ id: 1 }, { unique: true });
userSchema.index({ username: 1 }, { unique: true });

/** A user's balance in micro-points: `balanceMicros` plus the legacy ten-thousandths (each field absent counts 0). */
export function balanceMicrosOf(user: Pick<UserRecord, 'balanceMicros' | 'balanceUnits'> | null | undefined): number {
  return (user?.balanceMicros ?? 0) + legacyMicros(user?.balanceUnits);
}

/** Ten-thousandths of a point as micro-points; 0 for anything that is not a number (nothing this service could have written). */
export function legacyMicros(units: unknown): number {
  if (typeof units !== 'number') return 0;
  // The whole numbers this unit always held, at once; anything else exactly, through its decimal text.
  return Number.isSafeInteger(units * 100) ? units * 100 : (microsFromLegacyUnits(units) ?? 0);
}

/** The fields a read of the balance needs. */
export const BALANCE_FIELDS = { balanceMicros: 1, balanceUnits: 1 } as const;

export function userModel(connection: Connection): UserModel {
  return connection.model<UserRecord>('User', userSchema);
}
