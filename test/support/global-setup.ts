import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** What each project of `tsconfig.build.json` is built from, and the build info `tsc -b` writes each time it builds it. */
const ENGINE = {
  inputs: ['packages/embedded-mongodb/src', 'packages/embedded-mongodb/tsconfig.json', 'packages/embedded-mongodb/tsconfig.build.json'],
  buildInfo: 'packages/embedded-mongodb/dist/.tsbuildinfo',
};
const GATEWAY = {
  // The gateway is built against the engine's declarations: a change there is a change here.
  inputs: ['src', 'tsconfig.json', 'tsconfig.build.json', 'package.json', ...ENGINE.inputs],
  buildInfo: 'dist/.tsbuildinfo',
};

/** The latest modification time of a file, or of any file under a directory. */
function latestChange(path: string): number {
  const stats = statSync(path);
  if (!stats.isDirectory()) return stats.mtimeMs;
  let latest = stats.mtimeMs;
  for (const entry of readdirSync(path, { recursive: true, encoding: 'utf8' })) {
    latest = Math.max(latest, statSync(join(path, entry)).mtimeMs);
  }
  return latest;
}

/** Whether each project's build info is newer than everything it is built from: `tsc -b` would find nothing to do. */
function builtSinceLastChange(): boolean {
  if (!existsSync('dist/main.js')) return false;
  return [ENGINE, GATEWAY].every(
    ({ inputs, buildInfo }) => existsSync(buildInfo) && statSync(buildInfo).mtimeMs > Math.max(...inputs.map(latestChange)),
  );
}

/**
 * Tests that spawn the CLIs (embedded-db, a second gateway) run the built output, built only when
 * a source or a build setting changed since the last build (checking the times here takes a few
 * milliseconds; `tsc -b` takes seconds to find that nothing changed).
 * Type errors do not stop the emit; `npm run typecheck` is where they fail the build.
 */
export default function buildOnce(): void {
  if (builtSinceLastChange()) return;
  const build = spawnSync('npx', ['tsc', '-b', 'tsconfig.build.json'], { encoding: 'utf8' });
  if (!existsSync('dist/main.js')) {
    throw new Error(`the build produced no dist/main.js:\n${build.stdout}${build.stderr}`);
  }
}
