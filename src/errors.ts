import { ApolloServerErrorCode } from '@apollo/server/errors';
import { type ExecutionResult, GraphQLError, type GraphQLFormattedError } from 'graphql';
import {
  MongoClientClosedError,
  MongoError,
  MongoErrorLabel,
  MongoNetworkError,
  MongoNotConnectedError,
  MongoServerClosedError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
} from 'mongodb';

/**
 * Failures: the closed set of ways a request fails, each with its code and HTTP status,
 * and the two renderers that turn one into an answer (GraphQL, legacy REST body).
 * Nothing else decides a failure's status or body. Expected outcomes (not found, wallet
 * too low, bad quota, not on this deployment for buy) are not failures: they are data,
 * `ok: false` with a `UserError` (`shared/user-error.ts`).
 */

const SERVICE_UNAVAILABLE_TEXT = 'service temporarily unavailable, try again later';
export const INTERNAL_MESSAGE = 'internal server error';

interface Kind {
  code: string;
  /** The answer's HTTP status; 200 for a failure raised by one field, which leaves the status to the rest of the answer. */
  status: number;
  /** The legacy API reports unreadable bodies and bad input as `status: false` with HTTP 200, as the legacy service did. */
  legacyStatus?: number;
  /** The legacy API's own sentence, where it differs from the GraphQL message. */
  legacyText?: string;
}

const KINDS = {
  unauthenticated: { code: 'UNAUTHENTICATED', status: 401, legacyText: 'unauthorized' },
  rateLimited: { code: 'RATE_LIMITED', status: 429 },
  badRequest: { code: ApolloServerErrorCode.BAD_REQUEST, status: 400, legacyStatus: 200 },
  payloadTooLarge: { code: ApolloServerErrorCode.BAD_REQUEST, status: 413, legacyText: 'request body too large' },
  unsupportedMediaType: { code: ApolloServerErrorCode.BAD_REQUEST, status: 415, legacyStatus: 200 },
  invalidOperation: { code: ApolloServerErrorCode.GRAPHQL_VALIDATION_FAILED, status: 400 },
  responseTooLarge: { code: 'RESPONSE_TOO_LARGE', status: 400, legacyStatus: 200 },
  persistedQueryNotFound: { code: ApolloServerErrorCode.PERSISTED_QUERY_NOT_FOUND, status: 400 },
  persistedQueryOnly: { code: 'PERSISTED_QUERY_ONLY', status: 400 },
  badUserInput: { code: ApolloServerErrorCode.BAD_USER_INPUT, status: 200 },
  notAvailable: { code: 'UNAVAILABLE', status: 200 },
  // A subscription's failures are answered inside its stream (a WebSocket message, an event), where no HTTP status applies.
  subscriptionsUnavailable: { code: 'SUBSCRIPTIONS_UNAVAILABLE', status: 200 },
  tooManySubscriptions: { code: 'TOO_MANY_SUBSCRIPTIONS', status: 200 },
  eventsLost: { code: 'EVENTS_LOST', status: 200 },
  databaseUnavailable: { code: 'DATABASE_UNAVAILABLE', status: 503, legacyText: SERVICE_UNAVAILABLE_TEXT },
  upstreamUnavailable: { code: 'UPSTREAM_UNAVAILABLE', status: 503, legacyText: SERVICE_UNAVAILABLE_TEXT },
  // Not 401: the token may well be valid, its key cannot be fetched to check it.
  credentialsUncheckable: { code: 'AUTHENTICATION_UNAVAILABLE', status: 503 },
  noSuchEndpoint: { code: 'NOT_FOUND', status: 404 },
  originNotAllowed: { code: 'FORBIDDEN', status: 403 },
  tooManyConnections: { code: 'TOO_MANY_CONNECTIONS', status: 429 },
  credentialExpired: { code: 'UNAUTHENTICATED', status: 200 },
  methodNotAllowed: { code: 'METHOD_NOT_ALLOWED', status: 405 },
  internal: { code: ApolloServerErrorCode.INTERNAL_SERVER_ERROR, status: 500, legacyText: 'internal error' },
} as const satisfies Record<string, Kind>;

type FailureKind = keyof typeof KINDS;

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

/**
 * The codes the drivers' retryable reads and retryable writes specifications call retryable: the
 * server cannot serve now (not primary, stepping down, shutting down, a network failure or a time
 * limit between members). The driver retries an operation once on them and does not export its
 * list; a read fails with them unlabelled, so the code is all there is to go by.
 */
const RETRYABLE_CODES = new Set([6, 7, 89, 91, 134, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436]);
/** WriteConcernTimeout: the write is applied, but its replication was not confirmed in time. */
const WRITE_CONCERN_TIMEOUT = 64;
/**
 * MaxTimeMSExpired: the server stopped a command at the time limit it was given (by the driver's
 * `timeoutMS`, or the server's default for reads), having changed nothing: a busy or lagging
 * server, like the codes above, though the driver does not retry it.
 */
const MAX_TIME_MS_EXPIRED = 50;
/** Labels by which the server (or the driver) says that the same operation may succeed if tried again. */
const TRANSIENT_LABELS = [
  MongoErrorLabel.RetryableWriteError,
  MongoErrorLabel.TransientTransactionError,
  MongoErrorLabel.ResumableChangeStreamError,
  MongoErrorLabel.SystemOverloadedError,
  MongoErrorLabel.RetryableError,
];

/**
 * Whether an error means the database cannot be reached or cannot serve right now (an election, a
 * shutdown, a lost connection, an overloaded or lagging cluster, a read past its time limit), rather than a bug: by the driver's
 * own error classes and labels, and the codes it retries. Anything else (a programming error such
 * as 2 BadValue) is internal.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (
    error instanceof MongoNetworkError ||
    error instanceof MongoServerSelectionError ||
    error instanceof MongoTopologyClosedError ||
    error instanceof MongoServerClosedError ||
    error instanceof MongoClientClosedError ||
    error instanceof MongoNotConnectedError
  ) {
    return true;
  }
  if (!(error instanceof MongoError)) return false;
  const code = Number(error.code);
  return (
    TRANSIENT_LABELS.some((label) => error.hasErrorLabel(label)) ||
    RETRYABLE_CODES.has(code) ||
    code === WRITE_CONCERN_TIMEOUT ||
    code === MAX_TIME_MS_EXPIRED
  );
}

/** The failure anything thrown while serving a request stands for. */
export function failureOf(error: unknown): Failure {
  if (error instanceof Failure) return error;
  if (isDatabaseUnavailable(error)) return databaseUnavailable(error);
  // body-parser's errors carry a 4xx `status`, a `type` and, when too large, the `limit` in bytes.
  const { status, type, limit } = (error ?? {}) as { status?: unknown; type?: unknown; limit?: unknown };
  if (typeof status !== 'number' || status < 400 || status >= 500) return internal(error);
  if (status === 413) return payloadTooLarge(Number(limit));
  if (status === 415) return unsupportedMediaType();
  return badRequest(type === 'entity.parse.failed' ? 'request body is not valid JSON' : 'request body could not be read');
}

/**
 * The errors of an operation's result with the failures they stand for: a resolver that could
 * not reach the database answers the database-unavailable kind (and so HTTP 503), where it failed.
 */
export function withFailureKinds<T extends ExecutionResult>(result: T): T {
  const unreachable = (error: GraphQLError) => isDatabaseUnavailable(error.originalError);
  if (!result.errors?.some(unreachable)) return result;
  const errors = result.errors.map((error) => {
    if (!unreachable(error)) return error;
    const { message, extensions } = databaseUnavailable(error.originalError);
    return Object.assign(new GraphQLError(message, { path: error.path, originalError: error.originalError, extensions }), {
      locations: error.locations,
    });
  });
  return { ...result, errors };
}

// ---- GraphQL answers ----------------------------------------------------------------

export interface HttpAnswer {
  status: number;
  headers: Record<string, string>;
  body: object;
}

/** A failure outside any operation (credentials, limits, the request body), as a GraphQL response. */
export function graphqlAnswer(failure: Failure, requestId: string): HttpAnswer {
  const { http: _http, ...extensions } = failure.extensions;
  return {
    status: KINDS[failure.kind].status,
    headers: failure.headers,
    body: { errors: [{ message: failure.message, extensions: failure.kind === 'internal' ? { ...extensions, requestId } : extensions }] },
  };
}

export const INTERNAL_CODE = KINDS.internal.code;
export const VALIDATION_FAILED_CODE = KINDS.invalidOperation.code;

/** The code of a formatted GraphQL error; one without a code is internal, as Apollo Server answers it. */
export function codeOf(error: GraphQLFormattedError | GraphQLError): string {
  const code = error.extensions?.code;
  return typeof code === 'string' ? code : INTERNAL_CODE;
}

// ---- Legacy REST answers ------------------------------------------------------------

/** Where a legacy endpoint reports failures: `message` for conversations, `error` for quota, buy and package. */
export type FailureField = 'message' | 'error';

/** A failure as a legacy endpoint answers it: `status: false` and a sentence in its failure field. */
export function legacyAnswer(failure: Failure, field: FailureField, requestId: string): HttpAnswer {
  const kind: Kind = KINDS[failure.kind];
  return {
    status: kind.legacyStatus ?? kind.status,
    headers: failure.headers,
    body: {
      status: false,
      [field]: kind.legacyText ?? failure.message,
      // An internal error names the request, so a report can be matched with its log line.
      ...(failure.kind === 'internal' && { request_id: requestId }),
    },
  };
}

/** The kinds a REST layer's operation may fail with and still answer in the endpoint's own words; anything else is internal. */
const OPERATION_FAILURES: ReadonlySet<FailureKind> = new Set([
  'rateLimited',
  'databaseUnavailable',
  'notAvailable',
  'badUserInput',
  'responseTooLarge',
]);

/** The failure an error of an operation run in this process stands for: the failure a resolver threw, or internal. */
export function failureOfOperation(error: GraphQLError): Failure {
  const failure = failureOf(error.originalError ?? error);
  return OPERATION_FAILURES.has(failure.kind) ? failure : internal(error);
}

/**
 * The failure an operation's error stands for, read back from the answer of a remote gateway (the
 * REST sidecar's): by its code, for the kinds `failureOfOperation` answers; anything else is internal.
 */
export function failureOfAnswer(error: GraphQLFormattedError): Failure {
  switch (codeOf(error)) {
    case KINDS.rateLimited.code: {
      const { retryAfter } = error.extensions ?? {};
      return rateLimited(typeof retryAfter === 'number' && retryAfter >= 1 ? Math.ceil(retryAfter) : 1);
    }
    case KINDS.databaseUnavailable.code:
      return databaseUnavailable();
    case KINDS.credentialsUncheckable.code: {
      const retryAfter = Number(error.extensions?.retryAfter);
      return credentialsUncheckable(Number.isSafeInteger(retryAfter) && retryAfter >= 1 ? retryAfter : 5);
    }
    case KINDS.notAvailable.code:
      return notAvailable(error.message);
    case KINDS.badUserInput.code:
      return badUserInput(error.message);
    case KINDS.responseTooLarge.code: {
      const { maxBytes } = error.extensions ?? {};
      if (typeof maxBytes === 'number') return responseTooLarge(maxBytes);
    }
  }
  return internal(new Error(`operation failed: ${error.message}`));
}
