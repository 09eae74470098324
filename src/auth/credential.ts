import { MAX_CREDENTIAL_LENGTH } from '../limits.js';
import { API_KEY_PREFIX } from './api-key.js';

/** An access token: a compact JWS, its header, payload and signature in base64url (RFC 7515 §7.1). */
const ACCESS_TOKEN_SHAPE = /^[\w-]+\.[\w-]+\.[\w-]+$/;
/** What follows an API key's prefix: printable ASCII without spaces. */
const API_KEY_SHAPE = /^[\x21-\x7e]+$/;

/** A credential shaped like an access token or an API key; whether it is accepted is for its check to say. */
export type Credential = { kind: 'accessToken'; text: string } | { kind: 'apiKey'; text: string };

/**
 * The credential an `Authorization` header carries (`Bearer <credential>` or the bare credential),
 * or null when it is missing or shaped like neither kind, so that it is refused before anything
 * is looked up or read: by the gateway, and by the sidecar before it reads a body or asks upstream.
 */
export function credentialOf(authorization: string | undefined): Credential | null {
  if (authorization === undefined) return null;
  const value = authorization.trim();
  const text = /^bearer\s/i.test(value) ? value.slice(7).trim() : value;
  if (text.length > MAX_CREDENTIAL_LENGTH) return null;
  if (text.startsWith(API_KEY_PREFIX)) return isApiKeyShaped(text) ? { kind: 'apiKey', text } : null;
  return ACCESS_TOKEN_SHAPE.test(text) ? { kind: 'accessToken', text } : null;
}

/** Whether `text` can be presented as an API key: `sk-`, then printable ASCII without spaces, at most MAX_CREDENTIAL_LENGTH characters. */
export function isApiKeyShaped(text: string): boolean {
  return text.length <= MAX_CREDENTIAL_LENGTH && text.startsWith(API_KEY_PREFIX) && API_KEY_SHAPE.test(text.slice(API_KEY_PREFIX.length));
}
