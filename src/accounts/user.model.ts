import { Schema, type Connection, type Model } from 'mongoose';

export interface UserRecord {
  /** Numeric user id, the `sub` of access tokens. */
  id: number;
  username: string;
  /** Balance in ten-thousandths of a point (see points.ts). */
  balanceUnits: number;
  /** Highest conversation id ever given to this user; ids are never reused. */
  lastConversationId: number;
}

export type UserModel = Model<UserRecord>;

const userSchema = new Schema<UserRecord>(
  {
    id: { type: Number, required: true },
    username: { type: String, required: true },
    balanceUnits: { type: Number, required: true, default: 0 },
    lastConversationId: { type: Number, required: true, default: 0 },
  },
  { collection: 'users', timestamps: true, versionKey: false },
);
userSchema.index({ id: 1 }, { unique: true });
userSchema.index({ username: 1 }, { unique: true });

export function userModel(connection: Connection): UserModel {
  return connection.model<UserRecord>('User', userSchema);
}
