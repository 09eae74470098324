import { type Connection, type Model, Schema } from 'mongoose';

/** An API key, kept only as the SHA-256 of its text. */
export interface ApiKeyRecord {
  hash: string;
  userId: number;
}

export type ApiKeyModel = Model<ApiKeyRecord>;

const apiKeySchema = new Schema<ApiKeyRecord>(
  {
    hash: { type: String, required: true },
    userId: { type: Number, required: true },
  },
  { collection: 'apiKeys', timestamps: true, versionKey: false },
);
apiKeySchema.index({ hash: 1 }, { unique: true });

export function apiKeyModel(connection: Connection): ApiKeyModel {
  return connection.model<ApiKeyRecord>('ApiKey', apiKeySchema);
}
