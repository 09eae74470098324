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
  sso: { url: string; secret: string; timeoutMs: number; attempts: number } | undefined;
  /** How often unfinished purchases are settled with the provider (official deployment). */
  settlementIntervalMs: number;
  production: boolean;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Requests per second per caller; 0 turns limiting off. */
  rateLimit: number;
  metricsToken: string | undefined;
  playground: boolean;
}

export const DEFAULT_RATE_LIMIT = 20;

const optionalText = z
  .string()
  .trim()
  .transform((value) => (value === '' ? undefined : value))
  .optional();

const environmentSchema = z
  .object({
    PORT: z.coerce.number().int().min(0).max(65535).default(4000),
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
    SSO_TIMEOUT_MS: z.coerce.number().int().min(1).max(600_000).default(3_000),
    SSO_ATTEMPTS: z.coerce.number().int().min(1).max(10).default(3),
    SETTLEMENT_INTERVAL_MS: z.coerce.number().int().min(10).max(86_400_000).default(30_000),
    NODE_ENV: optionalText,
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    RATE_LIMIT: z.coerce.number().int().min(0).default(DEFAULT_RATE_LIMIT),
    METRICS_TOKEN: optionalText,
    PLAYGROUND: z.enum(['on', 'off']).optional(),
  })
  .superRefine((env, context) => {
    if (env.DEPLOYMENT === 'official') {
      for (const name of ['SSO_URL', 'SSO_SECRET'] as const) {
        if (env[name] === undefined) {
          context.addIssue({ code: 'custom', path: [name], message: 'is required when DEPLOYMENT=official' });
        }
      }
    }
  });

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Parses the environment; throws a `ConfigError` listing every problem at once. */
export function loadConfig(environment: NodeJS.ProcessEnv = process.env): Config {
  const parsed = environmentSchema.safeParse(environment);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => `${issue.path.join('.') || 'environment'} ${issue.message}`),
    );
  }
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
    settlementIntervalMs: env.SETTLEMENT_INTERVAL_MS,
    production,
    logLevel: env.LOG_LEVEL,
    rateLimit: env.RATE_LIMIT,
    metricsToken: env.METRICS_TOKEN,
    playground: env.PLAYGROUND === undefined ? !production : env.PLAYGROUND === 'on',
  };
}
