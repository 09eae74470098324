import { type Connection, type Model, Schema } from 'mongoose';

import type { Gift } from '../billing/gift.js';

export interface UserRecord {
  /** Numeric user id, the `sub` of access tokens. */
  id: number;
  username: string;
  /** Balance in micro-points, millionths of a point (see points.ts). */
  balanceMicros: number;
  /**
   * Balance in ten-thousandths of a point, as versions before micro-points stored it: folded
   * into `balanceMicros` at start (`AccountStore.foldLegacyBalances`), then absent.
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

export function userModel(connection: Connection): UserModel {
  return connection.model<UserRecord>('User', userSchema);
}
