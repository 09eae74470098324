import { readFileSync } from 'node:fs';

/** This package's version, from package.json at the project root (same relative path from src/ and dist/). */
export const packageVersion: string = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string })
  .version;
