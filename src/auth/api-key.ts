import { createHash } from 'node:crypto';

export const API_KEY_PREFIX = 'sk-';

/**
 * Keys are stored and looked up only by their SHA-256. They are long random
 * strings, so a fast unsalted hash is enough, and an index lookup by hash
 * reveals nothing about the key through timing.
 */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}
