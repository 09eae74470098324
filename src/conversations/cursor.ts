/** Cursors are opaque to clients: base64url of `conversation:<id>`. */
const PREFIX = 'conversation:';

export function encodeCursor(id: number): string {
  return Buffer.from(`${PREFIX}${id}`).toString('base64url');
}

/** The conversation id inside a cursor, or null when it is not one of ours. */
export function decodeCursor(cursor: string): number | null {
  const text = Buffer.from(cursor, 'base64url').toString();
  if (!text.startsWith(PREFIX)) return null;
  const digits = text.slice(PREFIX.length);
  return /^[1-9][0-9]{0,15}$/.test(digits) ? Number(digits) : null;
}
