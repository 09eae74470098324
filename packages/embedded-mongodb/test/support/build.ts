import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** The command-line test runs the built `dist/cli.js`, as the package ships it. */
export default function buildOnce(): void {
  const build = spawnSync('npx', ['tsc', '-b', 'tsconfig.build.json'], { cwd: root, encoding: 'utf8' });
  if (!existsSync(`${root}/dist/cli.js`)) {
    throw new Error(`the build produced no dist/cli.js:\n${build.stdout}${build.stderr}`);
  }
}
