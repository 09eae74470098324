import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startTestDatabase, type TestDatabase } from '../support/database.js';
import { runNode } from '../support/node-process.js';

/** A demo token exists only while the demo data set is loaded on the embedded engine (`seed/demo-data.ts`). */
describe('a gateway on a lasting database without JWT_SECRET', () => {
  let database: TestDatabase;

  beforeAll(async () => {
    database = await startTestDatabase();
  });
  afterAll(() => database?.stop());

  it('does not start: one clear line, before anything listens, and no token anywhere', async () => {
    // The case where a random signing secret made the playground hand every visitor a token for user 1.
    const gateway = await runNode('dist/main.js', [], { MONGODB_URI: database.uri, PORT: '0', HOST: '127.0.0.1' });
    expect(gateway.code).toBe(2);
    expect(gateway.stdout).toBe('');
    expect(gateway.stderr).toMatch(/JWT_SECRET or JWT_JWKS_URL is required when MONGODB_URI is set/);
    expect(gateway.stderr).not.toMatch(/\n\s+at |listening|ey[\w-]+\.[\w-]+\./);
  });
});
