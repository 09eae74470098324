import { availableParallelism } from 'node:os';

import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // graphql 16 ships CJS (`main`) and ESM (`module`) builds without an `exports` map. Node loads
    // the CJS one for every importer; Vite would load the ESM one for our sources, and two copies
    // of graphql reject each other's schema objects. Load the build Node loads.
    alias: [{ find: /^graphql$/, replacement: 'graphql/index.js' }],
  },
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Most files wait on servers, sockets and child processes rather than compute: vitest's default
    // (one worker fewer than the cores) would run them one at a time on a 2-core machine.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    projects: [
      {
        extends: true,
        // Workspace packages are imported from their TypeScript sources (see the README's "Workspace packages").
        ssr: { resolve: { conditions: ['chat-gateway-source'] } },
        test: {
          name: 'gateway',
          include: ['test/**/*.test.ts'],
          // The unit project's files: no build, no server, no database (`npm run test:unit`).
          exclude: [...configDefaults.exclude, 'test/unit/**'],
          globalSetup: ['test/support/global-setup.ts'],
        },
      },
      {
        extends: true,
        ssr: { resolve: { conditions: ['chat-gateway-source'] } },
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          // A unit test takes milliseconds; the bound only stops one that hangs.
          testTimeout: 10_000,
          // Each file builds what it needs in memory and mocks no module: the files of one worker
          // share its loaded modules (graphql, Apollo Server, the driver) rather than load them again.
          pool: 'threads',
          isolate: false,
        },
      },
      'packages/*',
    ],
  },
});
