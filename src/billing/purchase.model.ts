import { Schema, type Connection, type Model } from 'mongoose';

/** `pending` until the order is known to be paid (`credited`) or known never to be (`declined`). */
export type PurchaseState = 'pending' | 'credited' | 'declined';

/** Why a purchase was declined. */
export type DeclineReason = 'insufficient-funds' | 'unpaid' | 'never-charged';

/** One attempt to buy points: written before the provider is asked to charge its `orderId`. */
export interface PurchaseRecord {
  /** Sent to the provider as the order id: the idempotency key of the charge. */
  orderId: string;
  userId: number;
  /** The name the provider knows the user by, at the time of the purchase. */
  username: string;
  /** Points bought. */
  quota: number;
  /** Money charged: `quota / 10`. */
  amount: number;
  state: PurchaseState;
  declineReason?: DeclineReason;
  /** How many times the order was worked on: the purchase itself, then each settlement. */
  attempts: number;
  /** After this instant no payment call of ours for this order can still reach the provider. */
  payDeadline: Date;
  /** Who works on the order until `leaseUntil`; nobody else may settle it before then. */
  leaseOwner?: string;
  leaseUntil?: Date;
  createdAt?: Date;
  updatedAt?: Date;
}

export type PurchaseModel = Model<PurchaseRecord>;

const purchaseSchema = new Schema<PurchaseRecord>(
  {
    orderId: { type: String, required: true },
    userId: { type: Number, required: true },
    username: { type: String, required: true },
    quota: { type: Number, required: true },
    amount: { type: Number, required: true },
    state: { type: String, required: true, enum: ['pending', 'credited', 'declined'] },
    declineReason: { type: String, enum: ['insufficient-funds', 'unpaid', 'never-charged'] },
    attempts: { type: Number, required: true },
    payDeadline: { type: Date, required: true },
    leaseOwner: { type: String },
    leaseUntil: { type: Date },
  },
  { collection: 'purchases', timestamps: true, versionKey: false },
);
purchaseSchema.index({ orderId: 1 }, { unique: true });
// The settlement sweep looks for pending purchases whose lease has run out.
purchaseSchema.index({ state: 1, leaseUntil: 1 });
purchaseSchema.index({ userId: 1, createdAt: -1 });

export function purchaseModel(connection: Connection): PurchaseModel {
  return connection.model<PurchaseRecord>('Purchase', purchaseSchema);
}
