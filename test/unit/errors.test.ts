import { GraphQLError } from 'graphql';
import { MongoError, MongoErrorLabel, MongoNetworkError, MongoServerError } from 'mongodb';
import { describe, expect, it } from 'vitest';

import { failureOf, isDatabaseUnavailable, withFailureKinds } from '../../src/db/database-failures.js';
import {
  badRequest,
  badUserInput,
  codeOf,
  codeOfKind,
  credentialExpired,
  credentialsUncheckable,
  databaseUnavailable,
  eventsLost,
  Failure,
  FAILURE_KINDS,
  type FailureKind,
  internal,
  invalidOperation,
  methodNotAllowed,
  noSuchEndpoint,
  notAvailable,
  originNotAllowed,
  payloadTooLarge,
  persistedQueryNotFound,
  persistedQueryOnly,
  rateLimited,
  responseTooLarge,
  subscriptionsUnavailable,
  tooManyConnections,
  tooManySubscriptions,
  unauthenticated,
  unsupportedMediaType,
  upstreamUnavailable,
} from '../../src/errors.js';
import { graphqlAnswer } from '../../src/graphql/failure-answer.js';
import { failureOfRequest } from '../../src/http/failures.js';
import { legacyAnswer } from '../../src/rest/legacy-answer.js';
import { failureOfAnswer, failureOfOperation, OPERATION_FAILURE_KINDS } from '../../src/rest/operation-failures.js';

describe('the failure kinds', () => {
  it.each([
    [unauthenticated(), 'UNAUTHENTICATED', 401, 401, 'unauthorized'],
    [rateLimited(2), 'RATE_LIMITED', 429, 429, 'too many requests'],
    [badRequest('request body is not valid JSON'), 'BAD_REQUEST', 400, 200, 'request body is not valid JSON'],
    [payloadTooLarge(100), 'BAD_REQUEST', 413, 413, 'request body too large'],
    [unsupportedMediaType(), 'BAD_REQUEST', 415, 200, 'request body could not be read'],
    [invalidOperation('too costly'), 'GRAPHQL_VALIDATION_FAILED', 400, 400, 'too costly'],
    [responseTooLarge(1000), 'RESPONSE_TOO_LARGE', 400, 200, expect.stringMatching(/larger than 1000 bytes/)],
    [persistedQueryNotFound(), 'PERSISTED_QUERY_NOT_FOUND', 400, 400, expect.stringMatching(/^PersistedQueryNotFound/)],
    [persistedQueryOnly(), 'PERSISTED_QUERY_ONLY', 400, 400, expect.stringMatching(/^PersistedQueryOnly/)],
    [badUserInput('invalid id'), 'BAD_USER_INPUT', 200, 200, 'invalid id'],
    [notAvailable('not available on this deployment'), 'UNAVAILABLE', 200, 200, 'not available on this deployment'],
    [databaseUnavailable(), 'DATABASE_UNAVAILABLE', 503, 503, 'service temporarily unavailable, try again later'],
    [
      upstreamUnavailable('the gateway did not answer'),
      'UPSTREAM_UNAVAILABLE',
      503,
      503,
      'service temporarily unavailable, try again later',
    ],
    [noSuchEndpoint('GET', '/nope'), 'NOT_FOUND', 404, 404, 'no such endpoint: GET /nope'],
    [originNotAllowed('https://evil.example'), 'FORBIDDEN', 403, 403, expect.stringMatching(/CORS_ORIGINS/)],
    [
      tooManyConnections(3, 'address'),
      'TOO_MANY_CONNECTIONS',
      429,
      429,
      'too many live connections (WebSockets and event streams) from this address: at most 3 at once',
    ],
    [
      tooManyConnections(50, 'caller'),
      'TOO_MANY_CONNECTIONS',
      429,
      429,
      'too many live connections (WebSockets and event streams) for this caller: at most 50 at once',
    ],
    [methodNotAllowed('GET'), 'METHOD_NOT_ALLOWED', 405, 405, 'method not allowed; use GET'],
    [internal(new Error('secret detail')), 'INTERNAL_SERVER_ERROR', 500, 500, 'internal error'],
  ])('%s: code %s, HTTP %d on GraphQL, %d on REST, REST text %s', (failure, code, status, legacyStatus, legacyText) => {
    expect(failure).toBeInstanceOf(Failure);
    expect(failure).toBeInstanceOf(GraphQLError);
    expect(failure.extensions.code).toBe(code);
    expect(graphqlAnswer(failure, 'r').status).toBe(status);
    const legacy = legacyAnswer(failure, 'message', 'r');
    expect(legacy.status).toBe(legacyStatus);
    expect(legacy.body).toMatchObject({ status: false, message: legacyText });
  });

  it('carries its HTTP status in `extensions.http` for Apollo Server, except for the kinds a field raises', () => {
    expect(rateLimited(1).extensions.http).toEqual({ status: 429, headers: new Map([['Retry-After', '1']]) });
    expect(badUserInput('x').extensions.http).toBeUndefined();
    expect(tooManySubscriptions(1).extensions.http).toBeUndefined();
    expect(subscriptionsUnavailable('why').extensions.http).toBeUndefined();
    expect(eventsLost('why').extensions.http).toBeUndefined();
  });

  it('names the protection space of its own in WWW-Authenticate', () => {
    expect(unauthenticated().headers).toEqual({ 'WWW-Authenticate': 'Bearer' });
    expect(unauthenticated('metrics').headers).toEqual({ 'WWW-Authenticate': 'Bearer realm="metrics"' });
  });

  it('keeps an internal error’s cause for the log, never in its message', () => {
    const cause = new Error('driver said something private');
    const failure = internal(cause);
    expect(failure.message).toBe('internal server error');
    expect(failure.originalError).toBe(cause);
  });
});

describe('graphqlAnswer', () => {
  it('answers a failure outside any operation as a GraphQL response, without its HTTP details', () => {
    expect(graphqlAnswer(rateLimited(4), 'r')).toEqual({
      status: 429,
      headers: { 'Retry-After': '4' },
      body: { errors: [{ message: 'too many requests', extensions: { code: 'RATE_LIMITED', retryAfter: 4 } }] },
    });
  });

  it('names the request in an internal error', () => {
    expect(graphqlAnswer(internal(new Error('x')), 'request-7').body).toEqual({
      errors: [{ message: 'internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR', requestId: 'request-7' } }],
    });
  });
});

describe('legacyAnswer', () => {
  it('writes the failure in the endpoint’s failure field', () => {
    expect(legacyAnswer(notAvailable('not available on this deployment'), 'error', 'r')).toEqual({
      status: 200,
      headers: {},
      body: { status: false, error: 'not available on this deployment' },
    });
  });

  it('names the request in an internal error as request_id', () => {
    expect(legacyAnswer(internal(new Error('x')), 'message', 'request-8').body).toEqual({
      status: false,
      message: 'internal error',
      request_id: 'request-8',
    });
  });
});

describe('failureOf', () => {
  it('answers a failure as it is', () => {
    const failure = badUserInput('x');
    expect(failureOf(failure)).toBe(failure);
    expect(failureOfRequest(failure)).toBe(failure);
  });

  it('reads body-parser’s errors by their status and type, on a request', () => {
    expect(failureOfRequest({ status: 400, type: 'entity.parse.failed' })).toMatchObject({
      kind: 'badRequest',
      message: 'request body is not valid JSON',
    });
    expect(failureOfRequest({ status: 400, type: 'request.aborted' })).toMatchObject({
      kind: 'badRequest',
      message: 'request body could not be read',
    });
    expect(failureOfRequest({ status: 413, limit: 102_400 })).toMatchObject({
      kind: 'payloadTooLarge',
      message: 'request body is larger than the limit of 102400 bytes',
    });
    expect(failureOfRequest({ status: 415 })).toMatchObject({ kind: 'unsupportedMediaType' });
  });

  it('answers anything else as internal, a 5xx status included', () => {
    for (const classify of [failureOf, failureOfRequest]) {
      expect(classify(new Error('bug')).kind).toBe('internal');
      expect(classify({ status: 500 }).kind).toBe('internal');
      expect(classify(undefined).kind).toBe('internal');
      expect(classify('a string').kind).toBe('internal');
    }
  });

  it('answers a database that cannot serve as database-unavailable', () => {
    expect(failureOf(new MongoNetworkError('connection reset')).kind).toBe('databaseUnavailable');
    expect(failureOfRequest(new MongoNetworkError('connection reset')).kind).toBe('databaseUnavailable');
  });
});

describe('isDatabaseUnavailable', () => {
  const serverError = (code: number, labels: string[] = []) => {
    const error = new MongoServerError({ message: `code ${code}`, code, errorLabels: labels });
    return error;
  };

  it.each([
    ['a network error', new MongoNetworkError('reset')],
    ['NotWritablePrimary (10107)', serverError(10107)],
    ['InterruptedDueToReplStateChange (11602)', serverError(11602)],
    ['ShutdownInProgress (91)', serverError(91)],
    ['WriteConcernTimeout (64)', serverError(64)],
    ['an error labelled RetryableWriteError', serverError(2, [MongoErrorLabel.RetryableWriteError])],
    ['an error labelled TransientTransactionError', serverError(2, [MongoErrorLabel.TransientTransactionError])],
  ])('is true of %s', (_, error) => {
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it.each([
    ['BadValue (2)', serverError(2)],
    ['DuplicateKey (11000)', serverError(11000)],
    ['a plain MongoError', new MongoError('something')],
    ['an Error', new Error('bug')],
    ['nothing', undefined],
  ])('is false of %s', (_, error) => {
    expect(isDatabaseUnavailable(error)).toBe(false);
  });
});

describe('withFailureKinds', () => {
  it('turns a resolver’s lost database into DATABASE_UNAVAILABLE, keeping its path and locations', () => {
    const lost = new GraphQLError('connection reset', { path: ['quota'], originalError: new MongoNetworkError('reset') });
    Object.assign(lost, { locations: [{ line: 1, column: 3 }] });
    const other = new GraphQLError('other', { path: ['x'] });
    const { errors } = withFailureKinds({ data: { quota: null }, errors: [lost, other] });
    expect(errors![0]!.toJSON()).toMatchObject({
      message: 'database unavailable, try again later',
      path: ['quota'],
      locations: [{ line: 1, column: 3 }],
      extensions: { code: 'DATABASE_UNAVAILABLE' },
    });
    expect(errors![1]).toBe(other);
  });

  it('makes the failure the error’s original error, its cause the driver’s', () => {
    const reset = new MongoNetworkError('reset');
    const { errors } = withFailureKinds({ data: null, errors: [new GraphQLError('connection reset', { originalError: reset })] });
    const failure = errors![0]!.originalError;
    expect(failure).toBeInstanceOf(Failure);
    expect(failure).toMatchObject({ kind: 'databaseUnavailable', originalError: reset });
  });

  it('answers a result without such errors as it is', () => {
    const result = { data: { quota: 1 } };
    expect(withFailureKinds(result)).toBe(result);
  });
});

describe('the REST layer’s reading of an operation’s errors', () => {
  /** One failure of every kind: the compiler asks for a new kind here. */
  const ofEveryKind: Record<FailureKind, Failure> = {
    unauthenticated: unauthenticated(),
    rateLimited: rateLimited(3),
    badRequest: badRequest('request body is not valid JSON'),
    payloadTooLarge: payloadTooLarge(100),
    unsupportedMediaType: unsupportedMediaType(),
    invalidOperation: invalidOperation('too costly'),
    responseTooLarge: responseTooLarge(65_536),
    persistedQueryNotFound: persistedQueryNotFound(),
    persistedQueryOnly: persistedQueryOnly(),
    badUserInput: badUserInput('`first` must not be negative'),
    notAvailable: notAvailable('not available on this deployment'),
    subscriptionsUnavailable: subscriptionsUnavailable('why'),
    tooManySubscriptions: tooManySubscriptions(2),
    eventsLost: eventsLost('why'),
    databaseUnavailable: databaseUnavailable(),
    upstreamUnavailable: upstreamUnavailable('the gateway did not answer'),
    credentialsUncheckable: credentialsUncheckable(7),
    noSuchEndpoint: noSuchEndpoint('GET', '/nope'),
    originNotAllowed: originNotAllowed('https://evil.example'),
    tooManyConnections: tooManyConnections(3, 'address'),
    credentialExpired: credentialExpired(),
    methodNotAllowed: methodNotAllowed('GET'),
    internal: internal(new Error('x')),
  };

  it('holds the kinds an endpoint answers in its own words, each with a code of its own among them', () => {
    expect([...OPERATION_FAILURE_KINDS].sort()).toEqual(
      ['badUserInput', 'credentialsUncheckable', 'databaseUnavailable', 'notAvailable', 'rateLimited', 'responseTooLarge'].sort(),
    );
    expect(new Set(OPERATION_FAILURE_KINDS.map(codeOfKind)).size).toBe(OPERATION_FAILURE_KINDS.length);
  });

  it.each(FAILURE_KINDS)('reads %s alike, run in this process or read back from a remote answer', (kind) => {
    const failure = ofEveryKind[kind];
    const expected = (OPERATION_FAILURE_KINDS as FailureKind[]).includes(kind) ? kind : 'internal';
    const inProcess = failureOfOperation(new GraphQLError(failure.message, { originalError: failure }));
    const { http: _http, ...extensions } = failure.extensions;
    const remote = failureOfAnswer({ message: failure.message, extensions });
    expect([inProcess.kind, remote.kind]).toEqual([expected, expected]);
    if (expected === 'internal') return;
    expect(inProcess).toBe(failure);
    expect(legacyAnswer(remote, 'error', 'r')).toEqual(legacyAnswer(failure, 'error', 'r'));
  });

  it('reads a lost database as the execution named it, without asking the driver again', () => {
    const { errors } = withFailureKinds({
      data: null,
      errors: [new GraphQLError('reset', { originalError: new MongoNetworkError('reset') })],
    });
    expect(failureOfOperation(errors![0]!).kind).toBe('databaseUnavailable');
    // The driver's error itself, unnamed, is not read here: only the execution names it.
    expect(failureOfOperation(new GraphQLError('reset', { originalError: new MongoNetworkError('reset') })).kind).toBe('internal');
  });

  it('answers any other error of an operation as internal', () => {
    expect(failureOfOperation(new GraphQLError('Cannot return null for non-nullable field')).kind).toBe('internal');
    expect(failureOfAnswer({ message: 'x', extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } }).kind).toBe('internal');
    expect(failureOfAnswer({ message: 'x', extensions: { code: 'RESPONSE_TOO_LARGE' } }).kind).toBe('internal');
    expect(failureOfAnswer({ message: 'x' }).kind).toBe('internal');
  });

  it('reads a remote Retry-After of at least one second', () => {
    expect(failureOfAnswer({ message: 'x', extensions: { code: 'RATE_LIMITED', retryAfter: 2.2 } }).headers).toEqual({
      'Retry-After': '3',
    });
    expect(failureOfAnswer({ message: 'x', extensions: { code: 'RATE_LIMITED', retryAfter: 'soon' } }).headers).toEqual({
      'Retry-After': '1',
    });
    expect(failureOfAnswer({ message: 'x', extensions: { code: 'AUTHENTICATION_UNAVAILABLE', retryAfter: 'soon' } }).headers).toEqual({
      'Retry-After': '5',
    });
  });
});

describe('codeOf', () => {
  it('reads an error’s code; one without is internal', () => {
    expect(codeOf({ message: 'x', extensions: { code: 'BAD_USER_INPUT' } })).toBe('BAD_USER_INPUT');
    expect(codeOf({ message: 'x' })).toBe('INTERNAL_SERVER_ERROR');
    expect(codeOf({ message: 'x', extensions: { code: 5 } })).toBe('INTERNAL_SERVER_ERROR');
  });
});
