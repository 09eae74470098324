import { GRAPHQL_MAX_INT as MAX_ID } from 'graphql';

import { isTokenLifetime, secretKey, signAccessToken } from '../auth/access-token.js';
import { readKeptSecret } from '../auth/kept-secret.js';
import { ConfigError, loadTokenConfig } from '../config.js';
import { InvalidInput } from '../invalid-input.js';
import { runCommand } from './command.js';

const USAGE = `Usage: npm run token -- --user ID [--expires 24h]

Prints an access token (HS256 JWT) for user ID, signed with JWT_SECRET from the
environment or .env, or without it with the secret a default npm start keeps in
DATA_DIR (.data). A gateway accepts it when it signs with the same secret.
  --user ID       the user id, 1 to ${MAX_ID}
  --expires SPAN  lifetime such as 30m, 24h or 7d (default 24h)`;

await runCommand({
  name: 'token',
  usage: USAGE,
  options: { user: { type: 'string' }, expires: { type: 'string', default: '24h' } },
  async run({ values }) {
    const problems: string[] = [];
    if (values.user === undefined) problems.push('--user is required (see --help)');
    else if (!/^[1-9][0-9]{0,9}$/.test(values.user) || Number(values.user) > MAX_ID) {
      problems.push(`--user must be an id from 1 to ${MAX_ID}, not "${values.user}"`);
    }
    if (!isTokenLifetime(values.expires)) problems.push(`--expires must be a span such as 30m, 24h or 7d, not "${values.expires}"`);
    let jwtSecret: string | undefined;
    try {
      const config = loadTokenConfig();
      jwtSecret = config.jwtSecret ?? (config.dataDir === undefined ? undefined : await readKeptSecret(config.dataDir));
      if (jwtSecret === undefined) problems.push(noSecret(config.dataDir));
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      problems.push(...error.problems);
    }
    if (problems.length > 0) throw new InvalidInput(problems);
    process.stdout.write(`${await signAccessToken(secretKey(jwtSecret!), Number(values.user), values.expires)}\n`);
  },
});

function noSecret(dataDir: string | undefined): string {
  if (dataDir === undefined) {
    return 'JWT_SECRET is not set, and with DATA_DIR=memory a gateway signs with a random secret of its own (use the token it printed); to sign here, give both the same JWT_SECRET';
  }
  return `JWT_SECRET is not set, and ${dataDir} keeps no secret yet: start the gateway once in this directory (npm start), or give both the same JWT_SECRET`;
}
