import { createRequire } from 'node:module';
import { resolve } from 'node:path';

import type * as MongoDriver from 'mongodb';
import { z } from 'zod';

import { InvalidInput } from './invalid-input.js';

/**
 * The service's whole configuration, parsed once from the environment.
 * This is the only module that reads `process.env` (and `.env`).
 */
export interface Config {
  port: number;
  host: string;
  /** Real MongoDB; when absent the embedded engine is started in-process. */
  mongodbUri: string | undefined;
  /**
   * HS256 secret; absent only on the embedded engine (MONGODB_URI without it is refused), then
   * made once and kept in `dataDir` (random per process in memory).
   */
  jwtSecret: string | undefined;
  /** An OpenID Connect provider whose access tokens are accepted too (JWT_JWKS_URL); absent, only JWT_SECRET's. */
  tokenProvider: TokenProviderConfig | undefined;
  /** Users whose credentials may introspect the schema in production. */
  introspectionUsers: number[];
  /** The most operations one batched `POST /graphql` may carry; 1 refuses batches. */
  batchMax: number;
  /** Where the embedded engine keeps its data (an absolute path); undefined: in memory (DATA_DIR=memory), or MONGODB_URI is set. */
  dataDir: string | undefined;
  seedFile: string | undefined;
  deployment: 'community' | 'official';
  /** The external SSO provider; present exactly when `deployment` is `official`. */
  sso: SsoConfig | undefined;
  /** How unfinished purchases are settled with the provider (official deployment). */
  settlement: SettlementConfig;
  production: boolean;
  logLevel: LogLevel;
  /** Requests per second per caller; 0 turns limiting off. */
  rateLimit: number;
  /** Where rate-limit counters live: this process's memory, or the database (one budget across instances). */
  rateLimitStore: 'memory' | 'mongo';
  /**
   * The bytes of stored text one answer may carry, as written (JSON's escapes included); an operation
   * asking for more is refused whole (RESPONSE_TOO_LARGE). The sidecar reads at most this much of its
   * upstream's answer.
   */
  responseMaxBytes: number;
  /** Bearer token for `/metrics`; in production `/metrics` is served only when it is set. */
  metricsToken: string | undefined;
  /** Trusted documents: the file of documents by id, and whether `/graphql` runs only those. */
  persistedDocuments: { file: string; only: boolean } | undefined;
  /** Whether `/graphql` serves the schema as an Apollo Federation 2 subgraph (`_service`, `_entities`). */
  federationSubgraph: boolean;
  /** Which proxies may name the client's address in `X-Forwarded-For` (for per-address rate limits and logs). */
  trustProxy: TrustProxy;
  playground: boolean;
  /** Browser origins allowed to call the API from another origin; empty, no CORS headers at all. */
  corsOrigins: string[];
  /** A prefix under which the legacy endpoints are served as well as at the root, e.g. `/api`. */
  restBasePath: string | undefined;
  /** On SIGTERM/SIGINT, how long `/readyz` answers 503 while requests are still served, before the port closes. */
  shutdownDelayMs: number;
  /**
   * Subscriptions one caller may run at once (every transport), WebSockets one client address may
   * hold open (per instance), and what the server may hold unsent for one subscription connection
   * (a WebSocket, an event stream) before it drops it.
   */
  subscriptionCaps: {
    subscriptionsPerCaller: number;
    connectionsPerCaller: number;
    websocketsPerAddress: number;
    bufferedBytesPerConnection: number;
  };
  /** OpenTelemetry traces over OTLP/HTTP; absent (no endpoint, or the SDK disabled): nothing traced, nothing loaded. */
  tracing: TracingConfig | undefined;
}

/**
 * What decides whether traces are exported, and with which of the SDK's exporters; and what a
 * public edge decides otherwise than the SDK's defaults: which trace headers it takes from callers
 * and sends on (`OTEL_PROPAGATORS`), and its sampler (`OTEL_TRACES_SAMPLER` and `_ARG`), which a
 * caller's sampled flag never overrides. The SDK reads the other standard `OTEL_*` variables
 * itself (the endpoint and its headers, the service name, the batch schedule), from the same
 * environment `.env` fills: parsing them here too would copy the SDK's rules, and drift from them.
 */
export interface TracingConfig {
  protocol: 'http/protobuf' | 'http/json';
  /** W3C trace context (a caller's `traceparent` only, never its `tracestate`) and, when asked for, W3C baggage; none: no trace headers in or out. */
  propagators: readonly ('tracecontext' | 'baggage')[];
  sampler: SamplerConfig;
}

/** One of the SDK's standard samplers, by its `OTEL_TRACES_SAMPLER` name; `ratio` for the `traceidratio` ones. */
export interface SamplerConfig {
  name: (typeof SAMPLERS)[number];
  ratio: number;
}

const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;

/** Where an OpenID Connect provider's keys are, and what its access tokens must say. */
export interface TokenProviderConfig {
  /** The provider's JSON Web Key Set (its discovery document's `jwks_uri`). */
  jwksUrl: string;
  /** When set, a token's `iss` must equal it. */
  issuer: string | undefined;
  /** When set, a token's `aud` must be it or contain it. */
  audience: string | undefined;
  /** The claim that holds the user id: a decimal integer, as a string or a number. */
  userClaim: string;
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

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** Express's `trust proxy`: off, on, a number of hops, or the addresses / subnets / names it trusts. */
export type TrustProxy = boolean | number | string[];

/** The value `.env.example` gives JWT_SECRET: fine for trying the embedded engine, never for a lasting database. */
export const EXAMPLE_JWT_SECRET = 'development-only-secret-from-env-example';

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
const SERVED_SEGMENTS = [
  'graphql',
  'healthz',
  'readyz',
  'metrics',
  'openapi.json',
  'playground',
  'conversation',
  'quota',
  'buy',
  'package',
];

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

/**
 * One of a few words, refused in the same wording as every other variable (zod's own message,
 * `Invalid option: expected one of …`, reads unlike the rest).
 */
const oneOf = <const Values extends readonly [string, ...string[]]>(values: Values) =>
  z.enum(values, values.length === 2 ? `must be ${values[0]} or ${values[1]}` : `must be one of ${values.join(', ')}`);

const optionalText = z.string().trim().optional();

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

/** The MongoDB driver's own parser, loaded only by the commands that read MONGODB_URI. */
function connectionStringProblem(uri: string): string | undefined {
  const { MongoClient } = createRequire(import.meta.url)('mongodb') as typeof MongoDriver;
  try {
    // Parses and checks the string and its options; connects to nothing.
    new MongoClient(uri);
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

const otlpEndpoint = optionalText.refine(
  (url) => url === undefined || (/^https?:\/\//.test(url) && URL.canParse(url)),
  'must be an http(s) URL such as http://127.0.0.1:4318 (traces are sent over OTLP/HTTP)',
);

/** Every variable, with its default. `.env.example` lists the same names (a test keeps them in step). */
const VARIABLES = {
  PORT: wholeNumber(0, 65535).default(4000),
  HOST: z.string().trim().min(1).default('0.0.0.0'),
  MONGODB_URI: optionalText.superRefine((uri, context) => {
    if (uri === undefined) return;
    if (!/^mongodb(\+srv)?:\/\//.test(uri)) {
      context.addIssue({ code: 'custom', message: 'must start with mongodb:// or mongodb+srv://' });
      return;
    }
    const problem = connectionStringProblem(uri);
    if (problem !== undefined) context.addIssue({ code: 'custom', message: `is not a valid connection string: ${problem}` });
  }),
  JWT_SECRET: optionalText.refine((secret) => secret === undefined || secret.length >= 16, 'must be at least 16 characters'),
  JWT_JWKS_URL: optionalText.refine(
    (url) => url === undefined || (/^https?:\/\//.test(url) && URL.canParse(url)),
    "must be an http(s) URL: the provider's jwks_uri, such as https://id.example.com/realms/chat/protocol/openid-connect/certs",
  ),
  JWT_ISSUER: optionalText,
  JWT_AUDIENCE: optionalText,
  JWT_USER_CLAIM: z.string().trim().min(1).default('sub'),
  INTROSPECTION_USERS: z
    .string()
    .default('')
    .transform((value) => entriesOf(value))
    .refine(
      (ids) => ids.every((id) => /^[1-9][0-9]{0,15}$/.test(id) && Number.isSafeInteger(Number(id))),
      'must be comma-separated user ids (positive whole numbers)',
    )
    .transform((ids) => [...new Set(ids.map(Number))]),
  GRAPHQL_BATCH_MAX: wholeNumber(1, 1_000).default(10),
  DATA_DIR: z.string().trim().min(1).default('.data'),
  SEED_FILE: optionalText,
  DEPLOYMENT: oneOf(['community', 'official']).default('community'),
  SSO_URL: optionalText.refine((url) => url === undefined || URL.canParse(url), 'must be an absolute URL such as https://sso.example.com'),
  SSO_SECRET: optionalText,
  SSO_TIMEOUT_MS: wholeNumber(1, 600_000).default(3_000),
  SSO_ATTEMPTS: wholeNumber(1, 10).default(3),
  SETTLEMENT_INTERVAL_MS: wholeNumber(10, 86_400_000).default(30_000),
  SETTLEMENT_HORIZON: duration.default(7 * DURATION_UNITS_MS.d),
  SETTLEMENT_BACKOFF_MAX_MS: wholeNumber(100, 86_400_000).default(300_000),
  NODE_ENV: optionalText,
  LOG_LEVEL: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  RATE_LIMIT: wholeNumber(0, 1_000_000).default(20),
  RATE_LIMIT_STORE: oneOf(['memory', 'mongo']).default('memory'),
  RESPONSE_MAX_BYTES: wholeNumber(65_536, 1_073_741_824).default(33_554_432),
  METRICS_TOKEN: optionalText,
  PERSISTED_DOCUMENTS: optionalText,
  PERSISTED_DOCUMENTS_ONLY: oneOf(['true', 'false']).default('false'),
  FEDERATION_SUBGRAPH: oneOf(['true', 'false']).default('false'),
  TRUST_PROXY: optionalText.refine(
    (value) => value === undefined || /^(true|false|[0-9]+|[\w.:/]+(\s*,\s*[\w.:/]+)*)$/.test(value),
    'must be true, false, a number of proxies, or a comma-separated list of addresses, subnets or loopback/uniquelocal',
  ),
  PLAYGROUND: oneOf(['on', 'off']).optional(),
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
  /** Unset: 5000 in production, else 0. */
  SHUTDOWN_DELAY_MS: wholeNumber(0, 600_000).optional(),
  SUBSCRIPTIONS_PER_CALLER: wholeNumber(1, 1_000_000).default(20),
  LIVE_CONNECTIONS_PER_CALLER: wholeNumber(1, 1_000_000).default(50),
  WEBSOCKETS_PER_ADDRESS: wholeNumber(1, 1_000_000).default(100),
  WEBSOCKET_MAX_BUFFERED_BYTES: wholeNumber(1_024, 1_073_741_824).default(1_048_576),
  OTEL_EXPORTER_OTLP_ENDPOINT: otlpEndpoint,
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: otlpEndpoint,
  OTEL_EXPORTER_OTLP_PROTOCOL: z
    .enum(['http/protobuf', 'http/json'], 'must be http/protobuf or http/json (traces are sent over OTLP/HTTP; grpc is not offered)')
    .default('http/protobuf'),
  OTEL_SDK_DISABLED: oneOf(['true', 'false']).default('false'),
  OTEL_PROPAGATORS: z
    .string()
    .default('tracecontext')
    .transform((value) => entriesOf(value))
    .refine(
      (names) => names.length > 0 && names.every((name) => ['tracecontext', 'baggage', 'none'].includes(name)),
      'must be tracecontext, baggage (or both, comma-separated) or none: no other propagator is offered',
    )
    .refine((names) => !names.includes('none') || names.length === 1, 'none cannot be given with other propagators')
    .transform((names) => names.filter((name): name is 'tracecontext' | 'baggage' => name !== 'none')),
  OTEL_TRACES_SAMPLER: oneOf(SAMPLERS).default('parentbased_always_on'),
  OTEL_TRACES_SAMPLER_ARG: z
    .string()
    .trim()
    .regex(/^(0(\.[0-9]+)?|1(\.0+)?)$/, 'must be a sampling ratio from 0 to 1, such as 0.25')
    .transform(Number)
    .default(1),
};

export type VariableName = keyof typeof VARIABLES;

/** The variables `tracingConfig` reads, for the gateway and the sidecar alike. */
const TRACING_VARIABLES = [
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_PROTOCOL',
  'OTEL_SDK_DISABLED',
  'OTEL_PROPAGATORS',
  'OTEL_TRACES_SAMPLER',
  'OTEL_TRACES_SAMPLER_ARG',
] as const;
/** The HTTP side's variables, which the gateway and the sidecar read alike (`httpSettings`). */
const HTTP_VARIABLES = [
  'PORT',
  'HOST',
  'NODE_ENV',
  'LOG_LEVEL',
  'METRICS_TOKEN',
  'TRUST_PROXY',
  'CORS_ORIGINS',
  'REST_BASE_PATH',
  'SHUTDOWN_DELAY_MS',
  'RESPONSE_MAX_BYTES',
  ...TRACING_VARIABLES,
] as const;
/** Every variable the service reads, for the check that `.env.example` lists them all. */
export const VARIABLE_NAMES = Object.keys(VARIABLES) as VariableName[];

type Variables<Name extends VariableName> = { [K in Name]: z.output<(typeof VARIABLES)[K]> };

/** Bad configuration: one problem per variable (and per rule across variables), all told at once. */
export class ConfigError extends InvalidInput {
  constructor(problems: string[]) {
    super(problems);
    this.message = `Invalid configuration:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`;
  }
}

/**
 * Reads `.env` from the working directory into the environment, as dotenv does: variables
 * already set win. Without the file there is nothing to read. Entry points call it once.
 */
export function loadDotEnv(): void {
  try {
    process.loadEnvFile('.env');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new ConfigError([`.env could not be read: ${(error as Error).message}`]);
    }
  }
}

/**
 * Parses only the named variables (a command reads what it needs); an empty or blank value
 * counts as unset, as in `.env.example`. Throws a `ConfigError` listing every problem.
 */
function parseVariables<Name extends VariableName>(
  names: readonly Name[],
  environment: NodeJS.ProcessEnv,
  moreProblems: string[] = [],
): Variables<Name> {
  const shape = Object.fromEntries(names.map((name) => [name, VARIABLES[name]]));
  const given = Object.fromEntries(names.filter((name) => environment[name]?.trim()).map((name) => [name, environment[name]]));
  const parsed = z.object(shape).safeParse(given);
  const problems = [
    ...(parsed.success ? [] : parsed.error.issues.map((issue) => `${issue.path.join('.')} ${issue.message}`)),
    ...moreProblems,
  ];
  if (!parsed.success || problems.length > 0) throw new ConfigError(problems);
  return parsed.data as Variables<Name>;
}

/** Only the named variables, with the gateway's rules and defaults: for commands that need a few. */
export function loadVariables<const Name extends VariableName>(
  names: readonly Name[],
  environment: NodeJS.ProcessEnv = process.env,
): Variables<Name> {
  return parseVariables(names, environment);
}

/** Rules across variables, checked even when single variables are wrong, so every problem is told at once. */
function crossVariableProblems(environment: NodeJS.ProcessEnv): string[] {
  const problems: string[] = [];
  if (environment.DEPLOYMENT?.trim() === 'official') {
    for (const name of ['SSO_URL', 'SSO_SECRET'] as const) {
      if (!environment[name]?.trim()) problems.push(`${name} is required when DEPLOYMENT=official`);
    }
  }
  if (environment.MONGODB_URI?.trim() && !environment.JWT_SECRET?.trim() && !environment.JWT_JWKS_URL?.trim()) {
    problems.push(
      'JWT_SECRET or JWT_JWKS_URL is required when MONGODB_URI is set: tokens signed with a random secret would open a lasting database to whoever holds one',
    );
  }
  for (const name of ['JWT_ISSUER', 'JWT_AUDIENCE'] as const) {
    if (environment[name]?.trim() && !environment.JWT_JWKS_URL?.trim()) {
      problems.push(`${name} applies to an OpenID Connect provider's tokens: set JWT_JWKS_URL too, or leave ${name} unset`);
    }
  }
  if (environment.JWT_SECRET?.trim() === EXAMPLE_JWT_SECRET && (environment.MONGODB_URI?.trim() || isProduction(environment))) {
    problems.push('JWT_SECRET is the example value from .env.example: choose your own secret for a lasting database or production');
  }
  if (environment.PERSISTED_DOCUMENTS_ONLY?.trim() === 'true' && !environment.PERSISTED_DOCUMENTS?.trim()) {
    problems.push('PERSISTED_DOCUMENTS_ONLY=true needs PERSISTED_DOCUMENTS, the file of trusted documents');
  }
  return problems;
}

function isProduction(environment: NodeJS.ProcessEnv): boolean {
  return environment.NODE_ENV?.trim() === 'production';
}

/** The gateway's configuration: every variable. */
export function loadConfig(environment: NodeJS.ProcessEnv = process.env): Config {
  const env = parseVariables(VARIABLE_NAMES, environment, crossVariableProblems(environment));
  const http = httpSettings(env);
  return {
    ...http,
    mongodbUri: env.MONGODB_URI,
    jwtSecret: env.JWT_SECRET,
    tokenProvider:
      env.JWT_JWKS_URL === undefined
        ? undefined
        : { jwksUrl: env.JWT_JWKS_URL, issuer: env.JWT_ISSUER, audience: env.JWT_AUDIENCE, userClaim: env.JWT_USER_CLAIM },
    introspectionUsers: env.INTROSPECTION_USERS,
    batchMax: env.GRAPHQL_BATCH_MAX,
    dataDir: env.MONGODB_URI === undefined ? dataDirectory(env.DATA_DIR) : undefined,
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
    rateLimit: env.RATE_LIMIT,
    rateLimitStore: env.RATE_LIMIT_STORE,
    persistedDocuments:
      env.PERSISTED_DOCUMENTS === undefined ? undefined : { file: env.PERSISTED_DOCUMENTS, only: env.PERSISTED_DOCUMENTS_ONLY === 'true' },
    federationSubgraph: env.FEDERATION_SUBGRAPH === 'true',
    playground: env.PLAYGROUND === undefined ? !http.production : env.PLAYGROUND === 'on',
    subscriptionCaps: {
      subscriptionsPerCaller: env.SUBSCRIPTIONS_PER_CALLER,
      connectionsPerCaller: env.LIVE_CONNECTIONS_PER_CALLER,
      websocketsPerAddress: env.WEBSOCKETS_PER_ADDRESS,
      bufferedBytesPerConnection: env.WEBSOCKET_MAX_BUFFERED_BYTES,
    },
  };
}

/** The HTTP side of the configuration, the same for the gateway and the sidecar. */
function httpSettings(env: Variables<(typeof HTTP_VARIABLES)[number]>): SidecarConfig {
  const production = env.NODE_ENV === 'production';
  return {
    port: env.PORT,
    host: env.HOST,
    production,
    logLevel: env.LOG_LEVEL,
    metricsToken: env.METRICS_TOKEN,
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
    corsOrigins: env.CORS_ORIGINS,
    restBasePath: env.REST_BASE_PATH,
    // Production waits for load balancers to notice the stop; elsewhere nobody is waiting.
    shutdownDelayMs: env.SHUTDOWN_DELAY_MS ?? (production ? 5_000 : 0),
    responseMaxBytes: env.RESPONSE_MAX_BYTES,
    tracing: tracingConfig(env),
  };
}

/** Traces are exported when an OTLP endpoint is given (for all signals, or for traces), unless the SDK is disabled. */
function tracingConfig(env: Variables<(typeof TRACING_VARIABLES)[number]>): TracingConfig | undefined {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (endpoint === undefined || env.OTEL_SDK_DISABLED === 'true') return undefined;
  return {
    protocol: env.OTEL_EXPORTER_OTLP_PROTOCOL,
    propagators: env.OTEL_PROPAGATORS,
    sampler: { name: env.OTEL_TRACES_SAMPLER, ratio: env.OTEL_TRACES_SAMPLER_ARG },
  };
}

/** DATA_DIR as a path from the working directory; `memory` is no directory. */
function dataDirectory(value: string): string | undefined {
  return value === 'memory' ? undefined : resolve(value);
}

/** `npm run token`: the signing secret, or the data directory a default `npm start` keeps one in. */
export function loadTokenConfig(environment: NodeJS.ProcessEnv = process.env): Pick<Config, 'jwtSecret' | 'dataDir'> {
  const env = loadVariables(['JWT_SECRET', 'DATA_DIR'], environment);
  return { jwtSecret: env.JWT_SECRET, dataDir: dataDirectory(env.DATA_DIR) };
}

/** `npm run seed` and `npm run import`: the database they write, and the log level. */
export function loadDataCommandConfig(environment: NodeJS.ProcessEnv = process.env): Pick<Config, 'mongodbUri' | 'logLevel'> {
  const env = loadVariables(['MONGODB_URI', 'LOG_LEVEL'], environment);
  return { mongodbUri: env.MONGODB_URI, logLevel: env.LOG_LEVEL };
}

/** `npm run sso-stub`: the secret it shares with the gateway, when given. */
export function loadSsoStubConfig(environment: NodeJS.ProcessEnv = process.env): { ssoSecret: string | undefined } {
  return { ssoSecret: loadVariables(['SSO_SECRET'], environment).SSO_SECRET };
}

export type SidecarConfig = Pick<
  Config,
  | 'port'
  | 'host'
  | 'production'
  | 'logLevel'
  | 'metricsToken'
  | 'trustProxy'
  | 'corsOrigins'
  | 'restBasePath'
  | 'shutdownDelayMs'
  | 'responseMaxBytes'
  | 'tracing'
>;

/**
 * `npm run sidecar`: the HTTP side of the gateway's variables, with the same defaults.
 * `flags` (its --port and --host) win over PORT and HOST.
 */
export function loadSidecarConfig(
  flags: { port?: string; host?: string } = {},
  environment: NodeJS.ProcessEnv = process.env,
): SidecarConfig {
  const env = loadVariables(HTTP_VARIABLES, {
    ...environment,
    ...(flags.port !== undefined && { PORT: flags.port }),
    ...(flags.host !== undefined && { HOST: flags.host }),
  });
  return httpSettings(env);
}
