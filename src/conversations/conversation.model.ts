import { type Connection, type Model, Schema } from 'mongoose';

export interface MessageRecord {
  role: string;
  content: string;
}

export interface ConversationRecord {
  userId: number;
  /** Per-user id, unique among the owner's conversations and never reused. */
  id: number;
  name: string;
  model: string;
  enableWeb: boolean;
  /** Absent when a query projected message bodies away. */
  messages?: MessageRecord[];
}

export type ConversationModel = Model<ConversationRecord>;

/** The collection conversations are stored in: their change stream watches it. */
export const CONVERSATIONS_COLLECTION = 'conversations';

const messageSchema = new Schema<MessageRecord>(
  {
    role: { type: String, required: true },
    content: { type: String, required: true },
  },
  { _id: false },
);

const conversationSchema = new Schema<ConversationRecord>(
  {
    userId: { type: Number, required: true },
    id: { type: Number, required: true },
    name: { type: String, required: true },
    model: { type: String, required: true },
    enableWeb: { type: Boolean, required: true, default: false },
    messages: { type: [messageSchema], default: [] },
  },
  { collection: CONVERSATIONS_COLLECTION, timestamps: true, versionKey: false },
);
// Serves every read: a user's conversations newest first, and lookups by (userId, id).
conversationSchema.index({ userId: 1, id: -1 }, { unique: true });

export function conversationModel(connection: Connection): ConversationModel {
  return connection.model<ConversationRecord>('Conversation', conversationSchema);
}
