import { parseArgs } from 'node:util';
import { secretKey, signAccessToken } from '../auth/access-token.js';
import { loadConfig } from '../config.js';

// npm run token -- --user ID [--expires 24h]: prints an access token signed with JWT_SECRET.
const { values } = parseArgs({ options: { user: { type: 'string' }, expires: { type: 'string', default: '24h' } } });
const config = loadConfig();
const userId = Number(values.user);
if (!values.user || !/^[1-9][0-9]*$/.test(values.user) || !Number.isSafeInteger(userId)) {
  fail('usage: npm run token -- --user ID   (ID a positive integer)');
}
if (config.jwtSecret === undefined) {
  fail('JWT_SECRET is not set: a token signed with a random secret would be useless to the running service');
}
process.stdout.write(`${await signAccessToken(secretKey(config.jwtSecret), userId, values.expires)}\n`);

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}
