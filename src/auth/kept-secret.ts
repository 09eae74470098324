import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The file in DATA_DIR holding the signing secret the embedded default made for itself. */
export const KEPT_SECRET_FILE = 'jwt-secret';

/**
 * The signing secret kept in a data directory, made (random, mode 0600) the first time: tokens
 * signed with it stay valid across restarts, and `npm run token` in the same directory signs with
 * it too. Two processes making it at once agree: the file is created exclusively.
 */
export async function keptSecret(dataDir: string): Promise<string> {
  const existing = await readKeptSecret(dataDir);
  if (existing !== undefined) return existing;
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  try {
    await writeFile(join(dataDir, KEPT_SECRET_FILE), `${randomBytes(32).toString('base64url')}\n`, { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  return (await readKeptSecret(dataDir))!;
}

/** The secret kept in a data directory, if one was made there. */
export async function readKeptSecret(dataDir: string): Promise<string | undefined> {
  try {
    const secret = (await readFile(join(dataDir, KEPT_SECRET_FILE), 'utf8')).trim();
    return secret.length > 0 ? secret : undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
