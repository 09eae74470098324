import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/**
 * Tests that spawn the CLIs (embedded-db, a second gateway) run the built output.
 * Type errors do not stop the emit; `npm run typecheck` is where they fail the build.
 */
export default function buildOnce(): void {
  const build = spawnSync('npx', ['tsc', '-b', 'tsconfig.build.json'], { encoding: 'utf8' });
  if (!existsSync('dist/main.js')) {
    throw new Error(`the build produced no dist/main.js:\n${build.stdout}${build.stderr}`);
  }
}
