import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    name: 'embedded-mongodb',
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/build.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
