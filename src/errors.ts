import { ApolloServerErrorCode } from '@apollo/server/errors';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';

/**
 * Failures: the closed set of ways a request fails, each with its code and HTTP status. Nothing
 * else decides a failure's code or status. Which errors of the database stand for which kind is
 * `db/database-failures.ts`; the answers a failure is rendered as belong to each door:
 * `graphql/failure-answer.ts` (a GraphQL response) and `rest/legacy-answer.ts` (a legacy body).
 * Expected outcomes (not found, wallet too low, bad quota, not on this deployment) are not
 * failures: they are data, `ok: false` with a `UserError` (`shared/user-error.ts`).
 */

export const INTERNAL_MESSAGE = 'internal server error';

interface Kind {
  code: string;
  /** The answer's HTTP status; 200 for a failure raised by one field, which leaves the status to the rest of the answer. */
  status: number;
}

const KINDS = {
  unauthenticated: { code: 'UNAUTHENTICATED', status: 401 },
  rateLimited: { code: 'RATE_LIMITED', status: 429 },
  badRequest: { code: ApolloServerErrorCode.BAD_REQUEST, status: 400 },
  payloadTooLarge: { code: ApolloServerErrorCode.BAD_REQUEST, status: 413 },
  unsupportedMediaType: { code: ApolloServerErrorCode.BAD_REQUEST, status: 415 },
  invalidOperation: { code: ApolloServerErrorCode.GRAPHQL_VALIDATION_FAILED, status: 400 },
  responseTooLarge: { code: 'RESPONSE_TOO_LARGE', status: 400 },
  persistedQueryNotFound: { code: ApolloServerErrorCode.PERSISTED_QUERY_NOT_FOUND, status: 400 },
  persistedQueryOnly: { code: 'PERSISTED_QUERY_ONLY', status: 400 },
  badUserInput: { code: ApolloServerErrorCode.BAD_USER_INPUT, status: 200 },
  notAvailable: { code: 'UNAVAILABLE', status: 200 },
  // A subscription's failures are answered inside its stream (a WebSocket message, an event), where no HTTP status applies.
  subscriptionsUnavailable: { code: 'SUBSCRIPTIONS_UNAVAILABLE', status: 200 },
  tooManySubscriptions: { code: 'TOO_MANY_SUBSCRIPTIONS', status: 200 },
  eventsLost: { code: 'EVENTS_LOST', status: 200 },
  databaseUnavailable: { code: 'DATABASE_UNAVAILABLE', status: 503 },
  upstreamUnavailable: { code: 'UPSTREAM_UNAVAILABLE', status: 503 },
  // Not 401: the token may well be valid, its key cannot be fetched to check it.
  credentialsUncheckable: { code: 'AUTHENTICATION_UNAVAILABLE', status: 503 },
  noSuchEndpoint: { code: 'NOT_FOUND', status: 404 },
  originNotAllowed: { code: 'FORBIDDEN', status: 403 },
  tooManyConnections: { code: 'TOO_MANY_CONNECTIONS', status: 429 },
  credentialExpired: { code: 'UNAUTHENTICATED', status: 200 },
  methodNotAllowed: { code: 'METHOD_NOT_ALLOWED', status: 405 },
  internal: { code: ApolloServerErrorCode.INTERNAL_SERVER_ERROR, status: 500 },
} as const satisfies Record<string, Kind>;

export type FailureKind = keyof typeof KINDS;

/** Every kind, in the order above. */
export const FAILURE_KINDS = Object.keys(KINDS) as FailureKind[];

/** The code a failure of this kind carries in `extensions.code`. */
export const codeOfKind = (kind: FailureKind): string => KINDS[kind].code;

/** The HTTP status of a failure's answer; 200 for one raised by a field. */
export const statusOf = (failure: Failure): number => KINDS[failure.kind].status;

/** An answer over HTTP, as each door renders a failure. */
export interface HttpAnswer {
  status: number;
  headers: Record<string, string>;
  body: object;
}

/**
 * A failure of a known kind. It is a GraphQLError whose `extensions` carry the code and,
 * in `http`, the status and headers, so Apollo Server answers it as it is when a resolver
 * throws it; the HTTP steps around GraphQL throw it too, and a renderer answers it.
 */
export class Failure extends GraphQLError {
  /** HTTP headers its answer carries, whatever the surface. */
  readonly headers: Record<string, string>;

  constructor(
    readonly kind: FailureKind,
    message: string,
    options: { details?: Record<string, unknown>; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    const { code, status } = KINDS[kind];
    const headers = options.headers ?? {};
    super(message, {
      originalError: options.cause instanceof Error ? options.cause : undefined,
      extensions: { code, ...options.details, ...(status !== 200 && { http: { status, headers: new Map(Object.entries(headers)) } }) },
    });
    this.name = 'Failure';
    this.headers = headers;
  }
}

/** `realm` names a protection space of its own, such as the metrics. */
export const unauthenticated = (realm?: string) =>
  new Failure('unauthenticated', 'missing or invalid credentials', {
    headers: { 'WWW-Authenticate': realm === undefined ? 'Bearer' : `Bearer realm="${realm}"` },
  });

export const rateLimited = (retryAfterSeconds: number) =>
  new Failure('rateLimited', 'too many requests', {
    details: { retryAfter: retryAfterSeconds },
    headers: { 'Retry-After': String(retryAfterSeconds) },
  });

/** The request itself cannot be read (not JSON, cut short). */
export const badRequest = (message: string) => new Failure('badRequest', message);

export const payloadTooLarge = (limitBytes: number) =>
  new Failure('payloadTooLarge', `request body is larger than the limit of ${limitBytes} bytes`);

export const unsupportedMediaType = () => new Failure('unsupportedMediaType', 'request body could not be read');

/** An operation that validation lets through but a limit refuses (its cost), as Apollo Server refuses invalid ones. */
export const invalidOperation = (message: string) => new Failure('invalidOperation', message);

/**
 * An answer that would carry more stored text than one answer may (`RESPONSE_MAX_BYTES`): the
 * operation asked for too much at once, and the whole answer is this failure instead.
 */
export const responseTooLarge = (maxBytes: number) =>
  new Failure(
    'responseTooLarge',
    `the answer would be larger than ${maxBytes} bytes, the most one answer may carry: ask for fewer conversations or messages at once`,
    { details: { maxBytes } },
  );

/** A request names its document by an id that no trusted document has. */
export const persistedQueryNotFound = () =>
  new Failure('persistedQueryNotFound', 'PersistedQueryNotFound: no trusted document has this id');

/** A request carries a document's text where only trusted documents, named by their id, run. */
export const persistedQueryOnly = () =>
  new Failure(
    'persistedQueryOnly',
    'PersistedQueryOnly: this endpoint runs trusted documents only; send their documentId instead of a query',
  );

/** An argument or input value breaks a rule the schema cannot state. */
export const badUserInput = (message: string) => new Failure('badUserInput', message);

/** A feature the caller asked for cannot be served: not offered on this deployment, or its provider is down. */
export const notAvailable = (message: string) => new Failure('notAvailable', message);

/** Subscriptions cannot be served by this database (a standalone server has no change streams), or not right now. */
export const subscriptionsUnavailable = (reason: string) =>
  new Failure('subscriptionsUnavailable', `subscriptions are not available: ${reason}`);

export const tooManySubscriptions = (limit: number) =>
  new Failure('tooManySubscriptions', `too many subscriptions: at most ${limit} at once per caller; complete one first`);

/** A subscription could not be kept complete (the database lost its change history, or the client read too slowly). */
export const eventsLost = (reason: string) =>
  new Failure('eventsLost', `events were lost (${reason}): load the list again and subscribe again`);

export const databaseUnavailable = (cause?: unknown) =>
  new Failure('databaseUnavailable', 'database unavailable, try again later', { cause });

/** The remote GraphQL endpoint of a REST sidecar did not answer, or not with GraphQL. */
export const upstreamUnavailable = (message: string, cause?: unknown) => new Failure('upstreamUnavailable', message, { cause });

/** An access token whose key the identity provider's key set (JWT_JWKS_URL) cannot be fetched for right now. */
export const credentialsUncheckable = (retryAfterSeconds: number) =>
  new Failure(
    'credentialsUncheckable',
    "the identity provider's signing keys cannot be fetched right now, so this access token cannot be checked; try again later",
    { details: { retryAfter: retryAfterSeconds }, headers: { 'Retry-After': String(retryAfterSeconds) } },
  );

export const noSuchEndpoint = (method: string, path: string) => new Failure('noSuchEndpoint', `no such endpoint: ${method} ${path}`);

/** A browser page on an origin that is neither the server's nor in CORS_ORIGINS opens a WebSocket. */
export const originNotAllowed = (origin: string) =>
  new Failure('originNotAllowed', `origin ${origin} may not open a WebSocket here; list it in CORS_ORIGINS`);

/** Live connections (WebSockets and HTTP event streams together) over a cap of one address or one caller. */
export const tooManyConnections = (limit: number, per: 'address' | 'caller') =>
  new Failure(
    'tooManyConnections',
    `too many live connections (WebSockets and event streams) ${per === 'address' ? 'from this address' : 'for this caller'}: at most ${limit} at once`,
  );

/** A live subscription whose access token expired: its stream ends with this, as a WebSocket closes with 4403. */
export const credentialExpired = () => new Failure('credentialExpired', 'the credential expired: authenticate again and subscribe again');

export const methodNotAllowed = (allowed: string) =>
  new Failure('methodNotAllowed', `method not allowed; use ${allowed}`, { headers: { Allow: allowed } });

/** Anything unexpected: a bug, or a failure nobody foresaw. Its message never reaches a client. */
export const internal = (cause: unknown) => new Failure('internal', INTERNAL_MESSAGE, { cause });

export const INTERNAL_CODE = KINDS.internal.code;
export const VALIDATION_FAILED_CODE = KINDS.invalidOperation.code;

/** The code of a formatted GraphQL error; one without a code is internal, as Apollo Server answers it. */
export function codeOf(error: GraphQLFormattedError | GraphQLError): string {
  const code = error.extensions?.code;
  return typeof code === 'string' ? code : INTERNAL_CODE;
}
