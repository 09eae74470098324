import { execFileSync } from 'node:child_process';

// Tests that spawn the CLIs (embedded-db, sidecar, a second gateway) run the built output.
export default function buildOnce(): void {
  execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
}
