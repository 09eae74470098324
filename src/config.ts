import { z } from 'zod';

/**
 * The service's whole configuration, parsed once from the environment.
 * This is the only module that reads `process.env`.
 */
export interface Config {
  port: number;
  host: string;
  /** Real MongoDB; when absent the embedded engine is started in-process. */
  mongodbUri: string | undefined;
  /** HS256 secret; when absent a random one is made and a demo token printed. */
  jwtSecret: string | undefined;
  seedFile: string | undefined;
  deployment: 'community' | 'official';
  /** The external SSO provider; present exactly when `deployment` is `official`. */
  sso: SsoConfig | undefined;
  /** How unfinished purchases are settled with the provider (official deployment). */
  settlement: SettlementConfig;
  production: boolean;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Requests per second per caller; 0 turns limiting off. */
  rateLimit: number;
  metricsToken: string | undefined;
  /** Which proxies may name the client's address in `X-Forwarded-For` (for per-address rate limits and logs). */
  trustProxy: TrustProxy;
  playground: boolean;
  /** Browser origins allowed to call the API from another origin; empty, no CORS headers at all. */
  corsOrigins: string[];
  /** A prefix under which the legacy endpoints are served as well as at the root, e.g. `/api`. */
  restBasePath: string | undefined;
}

export interface SsoConfig {
  url: string;
  secret: string;
  /** Per attempt. */
  timeoutMs: number;
  attempts: number;
}

export interface SettlementConfig {
  /** The longest the settlement sweep sleeps between two passes. */
  intervalMs: number;
  /** Past this age an unfinished purchase is marked for review (it is still checked and settled). */
  horizonMs: number;
  /** The longest pause between two checks of one unfinished purchase. */
  backoffMaxMs: number;
}

/** Express's `trust proxy`: off, on, a number of hops, or the addresses / subnets / names it trusts. */
export type TrustProxy = boolean | number | string[];

function parseTrustProxy(value: string | undefined): TrustProxy {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  if (/^[0-9]+$/.test(value)) return Number(value);
  return value.split(',').map((entry) => entry.trim());
}

/**
 * The first path segments the service serves itself: a base path among them (or under one) would
 * shadow or be shadowed by those paths. The legacy endpoints' own segments are here too.
 */
const SERVED_SEGMENTS = ['graphql', 'healthz', 'readyz', 'metrics', 'openapi.json', 'playground', 'conversation', 'quota', 'buy', 'package'];

/** The non-empty entries of a comma-separated list. */
const entriesOf = (value: string) =>
  value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');

/** `CORS_ORIGINS`: each entry exactly an origin as browsers send it (`scheme://host[:port]`), never a wildcard. */
function originProblems(value: string): string[] {
  return entriesOf(value).flatMap((entry) => {
    if (entry.includes('*')) return [`"${entry}": wildcards are not allowed, list each origin`];
    const url = URL.canParse(entry) ? new URL(entry) : undefined;
    if (url?.origin === entry && /^https?:$/.test(url.protocol)) return [];
    const suggestion = url && /^https?:$/.test(url.protocol) ? ` (did you mean ${url.origin}?)` : '';
    return [`"${entry}" is not an origin: give http(s)://host[:port], with no path or trailing slash${suggestion}`];
  });
}

const optionalText = z
  .string()
  .trim()
  .transform((value) => (value === '' ? undefined : value))
  .optional();

/** A whole number from `min` to `max`, given as decimal digits. */
const wholeNumber = (min: number, max: number) =>
  z
    .string()
    .trim()
    .regex(/^[0-9]+$/, `must be a whole number from ${min} to ${max}`)
    .transform(Number)
    .refine((value) => value >= min && value <= max, `must be a whole number from ${min} to ${max}`);

const DURATION_UNITS_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** A positive duration with its unit, e.g. `7d`, `36h`, `90m`, `45s` or `500ms`; in milliseconds. */
const duration = z
  .string()
  .trim()
  .regex(/^[0-9]+(ms|s|m|h|d)$/, 'must be a duration such as 7d, 36h, 90m, 45s or 500ms')
  .transform((text) => {
    const [, amount, unit] = /^([0-9]+)(ms|s|m|h|d)$/.exec(text)!;
    return Number(amount) * DURATION_UNITS_MS[unit as keyof typeof DURATION_UNITS_MS];
  })
  .refine((ms) => ms > 0 && Number.isSafeInteger(ms), 'must be a duration above zero');

const environmentSchema = z
  .object({
    PORT: wholeNumber(0, 65535).default(4000),
    HOST: z.string().trim().min(1).default('0.0.0.0'),
    MONGODB_URI: optionalText.refine(
      (uri) => uri === undefined || /^mongodb(\+srv)?:\/\//.test(uri),
      'must start with mongodb:// or mongodb+srv://',
    ),
    JWT_SECRET: optionalText.refine(
      (secret) => secret === undefined || secret.length >= 16,
      'must be at least 16 characters',
    ),
    SEED_FILE: optionalText,
    DEPLOYMENT: z.enum(['community', 'official']).default('community'),
    SSO_URL: optionalText.refine(
      (url) => url === undefined || URL.canParse(url),
      'must be an absolute URL such as https://sso.example.com',
    ),
    SSO_SECRET: optionalText,
    SSO_TIMEOUT_MS: wholeNumber(1, 600_000).default(3_000),
    SSO_ATTEMPTS: wholeNumber(1, 10).default(3),
    SETTLEMENT_INTERVAL_MS: wholeNumber(10, 86_400_000).default(30_000),
    SETTLEMENT_HORIZON: duration.default(7 * DURATION_UNITS_MS.d),
    SETTLEMENT_BACKOFF_MAX_MS: wholeNumber(100, 86_400_000).default(300_000),
    NODE_ENV: optionalText,
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    RATE_LIMIT: wholeNumber(0, 1_000_000).default(20),
    METRICS_TOKEN: optionalText,
    TRUST_PROXY: optionalText.refine(
      (value) => value === undefined || /^(true|false|[0-9]+|[\w.:/]+(\s*,\s*[\w.:/]+)*)$/.test(value),
      'must be true, false, a number of proxies, or a comma-separated list of addresses, subnets or loopback/uniquelocal',
    ),
    PLAYGROUND: z.enum(['on', 'off']).optional(),
    CORS_ORIGINS: z
      .string()
      .default('')
      .superRefine((value, context) => {
        for (const message of originProblems(value)) context.addIssue({ code: 'custom', message });
      })
      .transform((value) => [...new Set(entriesOf(value))]),
    REST_BASE_PATH: optionalText
      .refine(
        (path) => path === undefined || /^(\/(?!\.+(\/|$))[\w.~-]+)+$/.test(path),
        'must start with / and name one or more path segments (letters, digits, . _ ~ -), without a trailing slash, e.g. /api',
      )
      .refine(
        (path) => path === undefined || !SERVED_SEGMENTS.includes(path.split('/')[1]?.toLowerCase() ?? ''),
        `must not start with a path the service serves itself (${SERVED_SEGMENTS.map((segment) => `/${segment}`).join(', ')})`,
      ),
  })

/** Rules across variables, checked even when single variables are wrong, so every problem is told at once. */
function crossVariableProblems(environment: NodeJS.ProcessEnv): string[] {
  if (environment.DEPLOYMENT?.trim() !== 'official') return [];
  return (['SSO_URL', 'SSO_SECRET'] as const)
    .filter((name) => !environment[name]?.trim())
    .map((name) => `${name} is required when DEPLOYMENT=official`);
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

function problemsOf(error: z.ZodError): string[] {
  return error.issues.map((issue) => `${issue.path.join('.') || 'environment'} ${issue.message}`);
}

/** Parses the environment; throws a `ConfigError` listing every problem at once. */
export function loadConfig(environment: NodeJS.ProcessEnv = process.env): Config {
  const parsed = environmentSchema.safeParse(environment);
  const problems = [...(parsed.success ? [] : problemsOf(parsed.error)), ...crossVariableProblems(environment)];
  if (!parsed.success || problems.length > 0) throw new ConfigError(problems);
  const env = parsed.data;
  const production = env.NODE_ENV === 'production';
  return {
    port: env.PORT,
    host: env.HOST,
    mongodbUri: env.MONGODB_URI,
    jwtSecret: env.JWT_SECRET,
    seedFile: env.SEED_FILE,
    deployment: env.DEPLOYMENT,
    sso:
      env.DEPLOYMENT === 'official' && env.SSO_URL && env.SSO_SECRET
        ? { url: env.SSO_URL, secret: env.SSO_SECRET, timeoutMs: env.SSO_TIMEOUT_MS, attempts: env.SSO_ATTEMPTS }
        : undefined,
    settlement: {
      intervalMs: env.SETTLEMENT_INTERVAL_MS,
      horizonMs: env.SETTLEMENT_HORIZON,
      backoffMaxMs: env.SETTLEMENT_BACKOFF_MAX_MS,
    },
    production,
    logLevel: env.LOG_LEVEL,
    rateLimit: env.RATE_LIMIT,
    metricsToken: env.METRICS_TOKEN,
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
    playground: env.PLAYGROUND === undefined ? !production : env.PLAYGROUND === 'on',
    corsOrigins: env.CORS_ORIGINS,
    restBasePath: env.REST_BASE_PATH,
  };
}

export type Environment = z.infer<typeof environmentSchema>;

/**
 * Parses only the variables a command needs, with the same rules and defaults as the service;
 * problems in any other variable do not concern it. Throws a `ConfigError` listing every problem.
 */
export function loadVariables<const Name extends keyof Environment>(
  names: readonly Name[],
  environment: NodeJS.ProcessEnv = process.env,
): Pick<Environment, Name> {
  const values: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const name of names) {
    const parsed = environmentSchema.shape[name].safeParse(environment[name]);
    if (parsed.success) values[name] = parsed.data;
    else problems.push(...parsed.error.issues.map((issue) => `${name} ${issue.message}`));
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return values as Pick<Environment, Name>;
}
