import { readFile } from 'node:fs/promises';

import { z } from 'zod';

import { type SsoStubUser, stubUserSchema } from './stub-server.js';

/**
 * The SSO stub's data file: the provider's users by username, each with a wallet in money units
 * (at most two decimal digits, not negative) and certification flags. Every field is optional;
 * users not listed, and fields left out, default to wallet 0, cert false, teenager false.
 *
 * ```json
 * { "users": {
 *     "alice": { "wallet": 100, "cert": true, "teenager": false },
 *     "bob": { "wallet": 0.5, "cert": false, "teenager": false } } }
 * ```
 */
const stubFileSchema = z.strictObject({
  users: z.record(z.string().min(1), stubUserSchema).default({}),
});

export class StubFileError extends Error {
  override readonly name = 'StubFileError';
}

/** Reads and validates a stub data file; throws a `StubFileError` naming the file and every problem. */
export async function readStubFile(path: string): Promise<Record<string, Partial<SsoStubUser>>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new StubFileError(`cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new StubFileError(`${path} is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  const parsed = stubFileSchema.safeParse(json);
  if (!parsed.success) throw new StubFileError(`${path} is not a valid SSO stub file:\n${z.prettifyError(parsed.error)}`);
  return parsed.data.users;
}
