import { type ExecutionResult, GraphQLError } from 'graphql';
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

import { databaseUnavailable, Failure, internal } from '../errors.js';

/**
 * Which errors of the MongoDB driver stand for which failure kind (`errors.ts`): the database
 * cannot serve right now, or something nobody foresaw. This is the only place that reads them.
 */

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

/** The failure anything thrown while serving a request stands for: a failure as it is, a database that cannot serve, or internal. */
export function failureOf(error: unknown): Failure {
  if (error instanceof Failure) return error;
  if (isDatabaseUnavailable(error)) return databaseUnavailable(error);
  return internal(error);
}

/**
 * The errors of an operation's result with the failures they stand for: a resolver that could
 * not reach the database answers the database-unavailable kind (and so HTTP 503), where it
 * failed. The error's `originalError` is then that failure (its cause the driver's error), so
 * whoever reads the result later finds the kind without asking the driver again.
 */
export function withFailureKinds<T extends ExecutionResult>(result: T): T {
  const unreachable = (error: GraphQLError) => isDatabaseUnavailable(error.originalError);
  if (!result.errors?.some(unreachable)) return result;
  const errors = result.errors.map((error) => {
    if (!unreachable(error)) return error;
    const failure = databaseUnavailable(error.originalError);
    return Object.assign(new GraphQLError(failure.message, { path: error.path, originalError: failure, extensions: failure.extensions }), {
      locations: error.locations,
    });
  });
  return { ...result, errors };
}
