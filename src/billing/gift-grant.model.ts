import { type Connection, type Model, Schema } from 'mongoose';

import { type Gift, GIFTS } from './gift.js';

/** The claim of one gift package by one user; the unique index makes the claim happen once, ever. */
export interface GiftGrantRecord {
  userId: number;
  gift: Gift;
  /** Points granted. */
  points: number;
  /** Set once the points are on the user's balance. */
  credited: boolean;
  createdAt?: Date;
  updatedAt?: Date;
}

export type GiftGrantModel = Model<GiftGrantRecord>;

const giftGrantSchema = new Schema<GiftGrantRecord>(
  {
    userId: { type: Number, required: true },
    gift: { type: String, required: true, enum: GIFTS },
    points: { type: Number, required: true },
    credited: { type: Boolean, required: true },
  },
  { collection: 'giftGrants', timestamps: true, versionKey: false },
);
giftGrantSchema.index({ userId: 1, gift: 1 }, { unique: true });

export function giftGrantModel(connection: Connection): GiftGrantModel {
  return connection.model<GiftGrantRecord>('GiftGrant', giftGrantSchema);
}
