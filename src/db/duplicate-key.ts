/** MongoDB's duplicate key error code. */
const DUPLICATE_KEY = 11000;

/** Whether a write failed because a unique index already holds its key. */
export function isDuplicateKey(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === DUPLICATE_KEY;
}
