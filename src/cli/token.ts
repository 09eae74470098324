import { parseArgs } from 'node:util';
import { secretKey, signAccessToken } from '../auth/access-token.js';
import { loadConfig } from '../config.js';

// npm run token -- --user ID [--expires 24h]: prints an access token signed with JWT_SECRET.
const USAGE = 'usage: npm run token -- --user ID [--expires 24h]   (ID a positive integer)';
let values: { user?: string; expires: string };
try {
  ({ values } = parseArgs({ options: { user: { type: 'string' }, expires: { type: 'string', default: '24h' } } }));
} catch {
  fail(USAGE);
}
const config = loadConfig();
const userId = Number(values.user);
if (!values.user || !/^[1-9][0-9]*$/.test(values.user) || !Number.isSafeInteger(userId)) fail(USAGE);
if (config.jwtSecret === undefined) {
  fail('JWT_SECRET is not set: a token signed with a random secret would be useless to the running service');
}
process.stdout.write(`${await signAccessToken(secretKey(config.jwtSecret), userId, values.expires)}\n`);

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}
