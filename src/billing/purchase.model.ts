import { type Connection, type Model, Schema } from 'mongoose';

/** Where a purchase is in its life; `purchase-lifecycle.ts` explains each state and why points are credited once. */
export type PurchaseState = 'opened' | 'pending' | 'crediting' | 'credited' | 'declined';

/** The states a purchase is still being worked on in. */
export const UNFINISHED_STATES = ['opened', 'pending', 'crediting'] as const satisfies readonly PurchaseState[];

/** Why a purchase was closed without points. */
export type DeclineReason = 'insufficient-funds' | 'unpaid' | 'never-sent' | 'closed-by-operator';

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
  /**
   * The caller's key for this intent to buy, when the buy carried one: a retry with it within the
   * window gets this purchase's answer instead of a new purchase. Taken off again when the key is
   * released (the window is over, or the order was never sent).
   */
  idempotencyKey?: string;
  state: PurchaseState;
  declineReason?: DeclineReason;
  /** Credited after it had been declined: the provider later said it was paid. */
  creditedLate?: boolean;
  openedAt: Date;
  closedAt?: Date;
  /** Checks of the order's status that left its fate open (the provider said `unknown` or could not be reached). */
  checks: number;
  /** What the last attempt to learn the order's fate found, while it is open. */
  lastCheck?: string;
  /**
   * While unfinished: when it is next worked on. Whoever works on it pushes this past the end of
   * its own work (a lease), so that nobody else takes it up meanwhile.
   */
  nextCheckAt?: Date;
  /** Who holds the lease. */
  leaseOwner?: string;
  /** Still open past the settlement horizon: an operator should look at it. It is still checked. */
  reviewSince?: Date;
  /**
   * The W3C trace context of the span that opened it, when that buy was traced and sampled: its
   * settlement, by whichever instance and however much later, is a span linked to it.
   */
  traceparent?: string;
}

export type PurchaseModel = Model<PurchaseRecord>;

const purchaseSchema = new Schema<PurchaseRecord>(
  {
    orderId: { type: String, required: true },
    userId: { type: Number, required: true },
    username: { type: String, required: true },
    quota: { type: Number, required: true },
    amount: { type: Number, required: true },
    idempotencyKey: { type: String },
    state: { type: String, required: true, enum: ['opened', 'pending', 'crediting', 'credited', 'declined'] },
    declineReason: { type: String, enum: ['insufficient-funds', 'unpaid', 'never-sent', 'closed-by-operator'] },
    creditedLate: { type: Boolean },
    openedAt: { type: Date, required: true },
    closedAt: { type: Date },
    checks: { type: Number, required: true },
    lastCheck: { type: String },
    nextCheckAt: { type: Date },
    leaseOwner: { type: String },
    reviewSince: { type: Date },
    traceparent: { type: String },
  },
  // Times come from the purchases module's clock, not from Mongoose's timestamps.
  { collection: 'purchases', versionKey: false },
);
purchaseSchema.index({ orderId: 1 }, { unique: true });
// The sweep looks for unfinished purchases that are due; operators list them.
purchaseSchema.index({ state: 1, nextCheckAt: 1 });
purchaseSchema.index({ userId: 1, openedAt: -1 });
// One purchase per caller and key, claimed by its insert; purchases without a key are not in it.
purchaseSchema.index({ userId: 1, idempotencyKey: 1 }, { unique: true, partialFilterExpression: { idempotencyKey: { $exists: true } } });

export function purchaseModel(connection: Connection): PurchaseModel {
  return connection.model<PurchaseRecord>('Purchase', purchaseSchema);
}
