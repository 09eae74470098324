import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { beforeAll, describe, expect, it } from 'vitest';

import { secretKey, verifyAccessToken } from '../../src/auth/access-token.js';
import { EXAMPLE_JWT_SECRET } from '../../src/config.js';
import { runNode } from '../support/node-process.js';

const SECRET = 'command-line-secret-0123456789';
/** Every command, as `npm run X` (or `npm start`) runs it. */
const COMMANDS = {
  'chat-gateway': 'dist/main.js',
  seed: 'dist/cli/seed.js',
  token: 'dist/cli/token.js',
  'embedded-db': 'dist/cli/embedded-db.js',
  'sso-stub': 'dist/cli/sso-stub.js',
  sidecar: 'dist/cli/sidecar.js',
  import: 'dist/cli/import.js',
} as const;

/** Each line on stderr is `name: message`; none is a line of a stack trace. */
function expectProblemLines(stderr: string, name: string): string[] {
  const lines = stderr.trimEnd().split('\n');
  for (const line of lines) expect(line).toMatch(new RegExp(`^${name}: \\S`));
  expect(stderr).not.toMatch(/^\s+at /m);
  return lines;
}

let emptyDirectory: string;
beforeAll(async () => {
  emptyDirectory = await mkdtemp(join(tmpdir(), 'no-dotenv-'));
});

describe.each(Object.entries(COMMANDS))('%s', (name, script) => {
  it('answers --help with its usage on stdout and exit code 0', async () => {
    const { code, stdout, stderr } = await runNode(script, ['--help'], {}, { cwd: emptyDirectory });
    expect(code).toBe(0);
    expect(stdout).toMatch(/^Usage: /);
    expect(stderr).toBe('');
  });

  it('refuses an unknown option in one line with exit code 2', async () => {
    const { code, stderr } = await runNode(script, ['--frobnicate'], {}, { cwd: emptyDirectory });
    expect(code).toBe(2);
    expect(expectProblemLines(stderr, name)).toEqual([`${name}: Unknown option '--frobnicate' (see --help)`]);
  });
});

describe('npm run token', () => {
  it('prints a token for the user, signed with JWT_SECRET, reading no other variable', async () => {
    // A gateway would refuse this environment (official without SSO_URL); the token command does not read it.
    const { code, stdout, stderr } = await runNode('dist/cli/token.js', ['--user', '42'], {
      JWT_SECRET: SECRET,
      DEPLOYMENT: 'official',
      PORT: 'eighty',
    });
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect((await verifyAccessToken(secretKey(SECRET), stdout.trim()))?.userId).toBe(42);
  });

  it('reads JWT_SECRET from .env in the working directory, where a variable already set wins', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'dotenv-'));
    await writeFile(join(directory, '.env'), `# a comment\nJWT_SECRET="${SECRET}"\n`);
    const fromFile = await runNode('dist/cli/token.js', ['--user', '7'], {}, { cwd: directory });
    expect((await verifyAccessToken(secretKey(SECRET), fromFile.stdout.trim()))?.userId).toBe(7);
    const other = 'set-in-the-environment-0123456789';
    const fromEnvironment = await runNode('dist/cli/token.js', ['--user', '7'], { JWT_SECRET: other }, { cwd: directory });
    expect((await verifyAccessToken(secretKey(other), fromEnvironment.stdout.trim()))?.userId).toBe(7);
  });

  it('signs with the example secret of .env.example, the one a gateway started from a copy of it uses', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'dotenv-'));
    await writeFile(join(directory, '.env'), await readFile('.env.example', 'utf8'));
    const { code, stdout } = await runNode('dist/cli/token.js', ['--user', '1'], {}, { cwd: directory });
    expect(code).toBe(0);
    expect((await verifyAccessToken(secretKey(EXAMPLE_JWT_SECRET), stdout.trim()))?.userId).toBe(1);
  });

  it('without JWT_SECRET says what to do, in one line with exit code 2', async () => {
    const { code, stderr } = await runNode('dist/cli/token.js', ['--user', '42'], {}, { cwd: emptyDirectory });
    expect(code).toBe(2);
    const [line, ...more] = expectProblemLines(stderr, 'token');
    expect(more).toEqual([]);
    expect(line).toMatch(
      /JWT_SECRET is not set, and with DATA_DIR=memory a gateway signs with a random secret of its own .*give both the same JWT_SECRET/,
    );
  });

  it('reports a bad user id, lifetime and secret one line each, with exit code 2', async () => {
    for (const user of ['0', 'abc', '-3', '2147483648', '12345678901234567890']) {
      const { code, stderr } = await runNode('dist/cli/token.js', [`--user=${user}`], { JWT_SECRET: SECRET });
      expect(code).toBe(2);
      expect(expectProblemLines(stderr, 'token')).toEqual([`token: --user must be an id from 1 to 2147483647, not "${user}"`]);
    }
    const { code, stderr } = await runNode('dist/cli/token.js', ['--user', '1', '--expires', 'banana'], { JWT_SECRET: 'short' });
    expect(code).toBe(2);
    expect(expectProblemLines(stderr, 'token')).toEqual([
      'token: --expires must be a span such as 30m, 24h or 7d, not "banana"',
      'token: JWT_SECRET must be at least 16 characters',
    ]);
  });
});

describe('npm run embedded-db', () => {
  it('needs --port rather than taking 27017 silently', async () => {
    const { code, stdout, stderr } = await runNode('dist/cli/embedded-db.js', []);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(expectProblemLines(stderr, 'embedded-db')).toEqual(['embedded-db: --port is required, e.g. --port 27017 (see --help)']);
  });
});

describe('configuration', () => {
  it('stops the gateway before listening with one line per problem and exit code 2', async () => {
    const { code, stdout, stderr } = await runNode('dist/main.js', [], {
      DEPLOYMENT: 'official',
      PORT: 'eighty',
      JWT_SECRET: 'short',
      MONGODB_URI: 'mongodb://db.example.com/chat?frobnicate=1',
    });
    expect(code).toBe(2);
    expect(stdout).toBe('');
    const lines = expectProblemLines(stderr, 'chat-gateway');
    expect(lines).toEqual([
      'chat-gateway: PORT must be a whole number from 0 to 65535',
      'chat-gateway: MONGODB_URI is not a valid connection string: option frobnicate is not supported',
      'chat-gateway: JWT_SECRET must be at least 16 characters',
      'chat-gateway: SSO_URL is required when DEPLOYMENT=official',
      'chat-gateway: SSO_SECRET is required when DEPLOYMENT=official',
    ]);
  });

  it('words a value outside a fixed set as it words every other problem, naming the values allowed', async () => {
    const { code, stderr } = await runNode('dist/main.js', [], {
      DEPLOYMENT: 'oficial',
      LOG_LEVEL: 'loud',
      PLAYGROUND: 'yes',
      OTEL_SDK_DISABLED: 'no',
    });
    expect(code).toBe(2);
    expect(expectProblemLines(stderr, 'chat-gateway')).toEqual([
      'chat-gateway: DEPLOYMENT must be community or official',
      'chat-gateway: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent',
      'chat-gateway: PLAYGROUND must be on or off',
      'chat-gateway: OTEL_SDK_DISABLED must be true or false',
    ]);
    expect(stderr).not.toMatch(/Invalid option|expected one of/);
  });

  it('refuses the example JWT secret with a lasting database', async () => {
    const { code, stderr } = await runNode('dist/main.js', [], {
      MONGODB_URI: 'mongodb://127.0.0.1:1/chat',
      JWT_SECRET: EXAMPLE_JWT_SECRET,
    });
    expect(code).toBe(2);
    expect(expectProblemLines(stderr, 'chat-gateway')).toEqual([
      'chat-gateway: JWT_SECRET is the example value from .env.example: choose your own secret for a lasting database or production',
    ]);
  });
});
