import { jwtVerify } from 'jose';

/**
 * What every peer of the benchmark does alike, written once: the JWT check, and the legacy
 * bodies of the list and the load built from stored rows. The benchmark checks that these bodies
 * are byte-identical to the gateway's before it measures anything.
 */

export interface ConversationRow {
  userId: number;
  id: number;
  name: string;
  model: string;
  enableWeb: boolean;
  messages?: { role: string; content: string }[];
}

/** The user of an `Authorization: Bearer <HS256 JWT>` header, or null. */
export function bearerUser(secret: string): (authorization: string | undefined) => Promise<number | null> {
  const key = new TextEncoder().encode(secret);
  return async (authorization) => {
    if (authorization === undefined) return null;
    try {
      const { payload } = await jwtVerify(authorization.replace(/^bearer\s+/i, ''), key, { algorithms: ['HS256'] });
      return /^[1-9][0-9]{0,15}$/.test(payload.sub ?? '') ? Number(payload.sub) : null;
    } catch {
      return null;
    }
  };
}

/** The `id` query parameter as a conversation id, or null when it is not one. */
export function conversationIdOf(parameter: unknown): number | null {
  return typeof parameter === 'string' && /^(0|[1-9][0-9]{0,9})$/.test(parameter) ? Number(parameter) : null;
}

export const INVALID_ID = { status: false, message: 'invalid id' };

export function listBody(rows: readonly ConversationRow[]) {
  const data = rows.map((row) => ({
    id: row.id,
    user_id: row.userId,
    name: row.name,
    message: null,
    model: row.model,
    enable_web: row.enableWeb,
  }));
  return { status: true, message: '', data };
}

export function loadBody(row: ConversationRow | null) {
  if (row === null) return { status: false, message: 'conversation not found' };
  const data = {
    id: row.id,
    user_id: row.userId,
    name: row.name,
    message: (row.messages ?? []).map(({ role, content }) => ({ role, content })),
    model: row.model,
    enable_web: row.enableWeb,
  };
  return { status: true, message: 'success', data };
}
