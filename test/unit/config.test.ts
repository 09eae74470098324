import { describe, expect, it } from 'vitest';

import { ConfigError, EXAMPLE_JWT_SECRET, loadConfig, loadDataCommandConfig, loadVariables } from '../../src/config.js';

const SECRET = 'a-secret-of-enough-length';

function problemsOf(environment: Record<string, string>): string[] {
  try {
    loadConfig(environment);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected the configuration to be refused');
}

describe('loadConfig, as a function of an environment', () => {
  it('gives every variable its default in an empty environment', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 4000,
      host: '0.0.0.0',
      mongodbUri: undefined,
      jwtSecret: undefined,
      deployment: 'community',
      sso: undefined,
      production: false,
      logLevel: 'info',
      rateLimit: 20,
      rateLimitStore: 'memory',
      responseMaxBytes: 33_554_432,
      persistedDocuments: undefined,
      trustProxy: false,
      playground: true,
      corsOrigins: [],
      restBasePath: undefined,
      shutdownDelayMs: 0,
      subscriptionCaps: { subscriptionsPerCaller: 20, websocketsPerAddress: 100, bufferedBytesPerConnection: 1_048_576 },
      settlement: { intervalMs: 30_000, horizonMs: 7 * 86_400_000, backoffMaxMs: 300_000 },
      tracing: undefined,
    });
  });

  it('reads nothing but the environment it is given', () => {
    expect(loadConfig({ PORT: '5001' }).port).toBe(5001);
    expect(loadConfig({}).port).toBe(4000);
  });

  it('counts an empty or blank value as unset', () => {
    expect(loadConfig({ PORT: '', RATE_LIMIT: '   ' })).toMatchObject({ port: 4000, rateLimit: 20 });
  });

  it.each([
    ['PORT', '65536', 'PORT must be a whole number from 0 to 65535'],
    ['PORT', '-1', 'PORT must be a whole number from 0 to 65535'],
    ['PORT', '80.5', 'PORT must be a whole number from 0 to 65535'],
    ['RATE_LIMIT', 'ten', 'RATE_LIMIT must be a whole number from 0 to 1000000'],
    ['RESPONSE_MAX_BYTES', '1024', 'RESPONSE_MAX_BYTES must be a whole number from 65536 to 1073741824'],
    ['JWT_SECRET', 'short', 'JWT_SECRET must be at least 16 characters'],
    ['MONGODB_URI', 'http://db', 'MONGODB_URI must start with mongodb:// or mongodb+srv://'],
  ])('refuses %s=%s, saying why', (name, value, problem) => {
    expect(problemsOf({ [name]: value, JWT_SECRET: name === 'JWT_SECRET' ? value : SECRET })).toContain(problem);
  });

  it('refuses a MONGODB_URI the driver cannot parse, in the driver’s words', () => {
    const problems = problemsOf({ MONGODB_URI: 'mongodb://host:99999/db', JWT_SECRET: SECRET });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^MONGODB_URI is not a valid connection string: /);
  });

  it('tells every problem at once, across variables and rules', () => {
    const problems = problemsOf({ PORT: 'x', LOG_LEVEL: 'loud', DEPLOYMENT: 'official' });
    expect(problems).toHaveLength(4);
    expect(problems).toEqual(
      expect.arrayContaining([
        'SSO_URL is required when DEPLOYMENT=official',
        'SSO_SECRET is required when DEPLOYMENT=official',
        expect.stringMatching(/^PORT /),
        expect.stringMatching(/^LOG_LEVEL /),
      ]),
    );
  });

  it('lists the problems in its message, one a line', () => {
    expect(() => loadConfig({ PORT: 'x' })).toThrow(/^Invalid configuration:\n {2}- PORT must be a whole number/);
  });

  it('needs JWT_SECRET with a lasting database, and refuses the example secret there and in production', () => {
    expect(problemsOf({ MONGODB_URI: 'mongodb://127.0.0.1/db' })[0]).toMatch(
      /^JWT_SECRET or JWT_JWKS_URL is required when MONGODB_URI is set/,
    );
    expect(problemsOf({ MONGODB_URI: 'mongodb://127.0.0.1/db', JWT_SECRET: EXAMPLE_JWT_SECRET })[0]).toMatch(/example value/);
    expect(problemsOf({ NODE_ENV: 'production', JWT_SECRET: EXAMPLE_JWT_SECRET })[0]).toMatch(/example value/);
    expect(loadConfig({ JWT_SECRET: EXAMPLE_JWT_SECRET }).jwtSecret).toBe(EXAMPLE_JWT_SECRET);
  });

  it('builds the SSO settings only on the official deployment', () => {
    const official = loadConfig({ DEPLOYMENT: 'official', SSO_URL: 'https://sso.example.com', SSO_SECRET: 's', SSO_ATTEMPTS: '2' });
    expect(official.sso).toEqual({ url: 'https://sso.example.com', secret: 's', timeoutMs: 3_000, attempts: 2 });
    expect(loadConfig({ SSO_URL: 'https://sso.example.com', SSO_SECRET: 's' }).sso).toBeUndefined();
  });

  it.each([
    ['7d', 7 * 86_400_000],
    ['36h', 36 * 3_600_000],
    ['90m', 90 * 60_000],
    ['45s', 45_000],
    ['500ms', 500],
  ])('reads SETTLEMENT_HORIZON=%s as %d ms', (value, ms) => {
    expect(loadConfig({ SETTLEMENT_HORIZON: value }).settlement.horizonMs).toBe(ms);
  });

  it.each(['7', '7 days', '0s', '-1h', '1.5h'])('refuses SETTLEMENT_HORIZON=%s', (value) => {
    expect(problemsOf({ SETTLEMENT_HORIZON: value })[0]).toMatch(/^SETTLEMENT_HORIZON must be a duration/);
  });

  it.each([
    [undefined, false],
    ['false', false],
    ['true', true],
    ['2', 2],
    ['loopback, 10.0.0.0/8', ['loopback', '10.0.0.0/8']],
  ])('reads TRUST_PROXY=%s', (value, trustProxy) => {
    expect(loadConfig(value === undefined ? {} : { TRUST_PROXY: value }).trustProxy).toEqual(trustProxy);
  });

  it('reads CORS_ORIGINS as a list of origins, each once', () => {
    expect(loadConfig({ CORS_ORIGINS: 'https://a.example, http://b.example:8080,https://a.example' }).corsOrigins).toEqual([
      'https://a.example',
      'http://b.example:8080',
    ]);
  });

  it.each([
    ['a wildcard', '*', '"*": wildcards are not allowed, list each origin'],
    ['a path', 'https://a.example/app', expect.stringMatching(/did you mean https:\/\/a\.example\?/)],
    ['a trailing slash', 'https://a.example/', expect.stringMatching(/did you mean https:\/\/a\.example\?/)],
    ['no scheme', 'a.example', expect.stringMatching(/is not an origin/)],
  ])('refuses %s in CORS_ORIGINS', (_, value, problem) => {
    expect(problemsOf({ CORS_ORIGINS: value })).toEqual([expect.stringMatching(/^CORS_ORIGINS /)]);
    expect(problemsOf({ CORS_ORIGINS: value })[0]).toEqual(typeof problem === 'string' ? `CORS_ORIGINS ${problem}` : problem);
  });

  it.each(['/api', '/legacy/v1', '/a.b~c-d'])('takes REST_BASE_PATH=%s', (path) => {
    expect(loadConfig({ REST_BASE_PATH: path }).restBasePath).toBe(path);
  });

  it.each(['api', '/api/', '/', '/../x', '/graphql', '/Quota/x', '/a b'])('refuses REST_BASE_PATH=%s', (path) => {
    expect(problemsOf({ REST_BASE_PATH: path })[0]).toMatch(/^REST_BASE_PATH must/);
  });

  it('turns the playground off in production unless asked for, and on elsewhere unless turned off', () => {
    expect(loadConfig({ NODE_ENV: 'production' }).playground).toBe(false);
    expect(loadConfig({ NODE_ENV: 'production', PLAYGROUND: 'on' }).playground).toBe(true);
    expect(loadConfig({ PLAYGROUND: 'off' }).playground).toBe(false);
  });

  it('needs the file of trusted documents for PERSISTED_DOCUMENTS_ONLY', () => {
    expect(problemsOf({ PERSISTED_DOCUMENTS_ONLY: 'true' })).toEqual([
      'PERSISTED_DOCUMENTS_ONLY=true needs PERSISTED_DOCUMENTS, the file of trusted documents',
    ]);
    expect(loadConfig({ PERSISTED_DOCUMENTS: 'docs.json', PERSISTED_DOCUMENTS_ONLY: 'true' }).persistedDocuments).toEqual({
      file: 'docs.json',
      only: true,
    });
  });
});

describe('commands that read a few variables', () => {
  it('read only those: a bad variable they do not need is not theirs to refuse', () => {
    expect(loadVariables(['LOG_LEVEL'], { LOG_LEVEL: 'debug', PORT: 'not a port' })).toEqual({ LOG_LEVEL: 'debug' });
    expect(loadDataCommandConfig({ PORT: 'x' })).toEqual({ mongodbUri: undefined, logLevel: 'info' });
  });

  it('apply the gateway’s rules to those they read', () => {
    expect(() => loadVariables(['LOG_LEVEL'], { LOG_LEVEL: 'loud' })).toThrow(ConfigError);
  });
});
