import { ErrorCode } from './errors.js';

/**
 * The error labels mongod attaches to a failed command or a write concern
 * error itself (its ErrorLabelBuilder), from which drivers decide to retry a
 * write, retry a transaction or resume a change stream.
 */

/** mongod's RetriableError category. */
const RETRIABLE = new Set<number>([
  ErrorCode.HostUnreachable,
  ErrorCode.HostNotFound,
  ErrorCode.NetworkTimeout,
  ErrorCode.ShutdownInProgress,
  ErrorCode.ReadConcernMajorityNotAvailableYet,
  ErrorCode.PrimarySteppedDown,
  ErrorCode.ExceededTimeLimit,
  ErrorCode.SocketException,
  ErrorCode.NotWritablePrimary,
  ErrorCode.InterruptedAtShutdown,
  ErrorCode.InterruptedDueToReplStateChange,
  ErrorCode.NotPrimaryNoSecondaryOk,
  ErrorCode.NotPrimaryOrSecondary,
]);
/** The NetworkError category (all of them retriable too). */
const NETWORK = new Set<number>([ErrorCode.HostUnreachable, ErrorCode.HostNotFound, ErrorCode.NetworkTimeout, ErrorCode.SocketException]);
/** The NeedRetargettingError category (a router's stale routing table). */
const NEED_RETARGETTING = new Set<number>([ErrorCode.StaleEpoch, ErrorCode.StaleConfig]);
/** The SnapshotError category. */
const SNAPSHOT = new Set<number>([ErrorCode.SnapshotTooOld, ErrorCode.SnapshotUnavailable, ErrorCode.StaleChunkHistory]);
/** The NonResumableChangeStreamError category. */
const NON_RESUMABLE_CHANGE_STREAM = new Set<number>([ErrorCode.ChangeStreamFatalError, ErrorCode.ChangeStreamHistoryLost]);
/** Codes that are transient in a transaction besides the retriable ones. */
const TRANSIENT = new Set<number>([ErrorCode.WriteConflict, ErrorCode.LockTimeout]);
const COMMIT_OR_ABORT = new Set(['commitTransaction', 'abortTransaction']);

/** What mongod knows of the command when it labels its error. */
export interface LabelContext {
  /** The command's canonical name. */
  command: string;
  /** Whether it carried a transaction number, and `autocommit` (only transactions do). */
  txnNumber: boolean;
  autocommit: boolean;
  /**
   * Whether the command is known to belong to a change stream: an aggregate
   * whose pipeline starts with `$changeStream`, or a getMore once its cursor
   * was found to be one (not before: an error raised before the cursor is
   * checked out gets no change stream label).
   */
  changeStream: boolean;
}

function isTransientTransactionError(context: LabelContext, code: number | undefined, wcCode: number | undefined): boolean {
  if (code === undefined || !context.txnNumber || !context.autocommit) return false;
  if (TRANSIENT.has(code) || SNAPSHOT.has(code) || NEED_RETARGETTING.has(code)) return true;
  if (COMMIT_OR_ABORT.has(context.command)) return code === ErrorCode.NoSuchTransaction && wcCode === undefined;
  return RETRIABLE.has(code) || code === ErrorCode.NoSuchTransaction;
}

function isRetryableWriteError(context: LabelContext, code: number | undefined, wcCode: number | undefined): boolean {
  const retryableWrite = context.txnNumber && !context.autocommit;
  const commitOrAbort = context.txnNumber && context.autocommit && COMMIT_OR_ABORT.has(context.command);
  if (!retryableWrite && !commitOrAbort) return false;
  return (code !== undefined && RETRIABLE.has(code)) || (wcCode !== undefined && RETRIABLE.has(wcCode));
}

function isResumableChangeStreamError(context: LabelContext, code: number | undefined, wcCode: number | undefined): boolean {
  if (code === undefined || wcCode !== undefined || !context.changeStream) return false;
  if (context.command !== 'aggregate' && context.command !== 'getMore') return false;
  return (
    RETRIABLE.has(code) ||
    NETWORK.has(code) ||
    NEED_RETARGETTING.has(code) ||
    code === ErrorCode.RetryChangeStream ||
    code === ErrorCode.FailedToSatisfyReadPreference
  );
}

/**
 * The labels of a reply that failed with `code` or carries a write concern
 * error `wcCode`. mongod's NoWritesPerformed is never among them: it adds it
 * only when a command that ran without writing failed with a retriable code,
 * which no command of the engine does on its own.
 */
export function errorLabels(context: LabelContext, code: number | undefined, wcCode: number | undefined): string[] {
  const labels: string[] = [];
  if (isTransientTransactionError(context, code, wcCode)) labels.push('TransientTransactionError');
  else if (isRetryableWriteError(context, code, wcCode)) labels.push('RetryableWriteError');
  if (labels.length === 0 && isResumableChangeStreamError(context, code, wcCode)) labels.push('ResumableChangeStreamError');
  else if (code !== undefined && NON_RESUMABLE_CHANGE_STREAM.has(code)) labels.push('NonResumableChangeStreamError');
  return labels;
}
