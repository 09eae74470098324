import { MingoError } from 'mingo/util';

/** Server error codes used by the engine, with the names MongoDB gives them. */
export const ErrorCode = {
  InternalError: 1,
  BadValue: 2,
  Unauthorized: 13,
  NoSuchKey: 4,
  FailedToParse: 9,
  TypeMismatch: 14,
  Overflow: 15,
  IllegalOperation: 20,
  NoReplicationEnabled: 76,
  NamespaceNotFound: 26,
  IndexNotFound: 27,
  PathNotViable: 28,
  NoMatchingDocument: 47,
  ConflictingUpdateOperators: 40,
  CursorNotFound: 43,
  NamespaceExists: 48,
  MaxTimeMSExpired: 50,
  DollarPrefixedFieldName: 52,
  InvalidIdField: 53,
  NotSingleValueField: 54,
  InvalidDBRef: 55,
  EmptyFieldName: 56,
  CommandNotFound: 59,
  ImmutableField: 66,
  CannotCreateIndex: 67,
  InvalidOptions: 72,
  InvalidNamespace: 73,
  IndexOptionsConflict: 85,
  IndexKeySpecsConflict: 86,
  UnsatisfiableWriteConcern: 100,
  UnknownReplWriteConcern: 79,
  CommandNotSupported: 115,
  DocumentValidationFailure: 121,
  CappedPositionLost: 136,
  CannotIndexParallelArrays: 171,
  InvalidIndexSpecificationOption: 197,
  QueryPlanKilled: 175,
  TransactionTooOld: 225,
  InvalidResumeToken: 260,
  OperationNotSupportedInTransaction: 263,
  ChangeStreamFatalError: 280,
  ChangeStreamHistoryLost: 286,
  CursorInUse: 292,
  UnsupportedOpQueryCommand: 352,
  NotWritablePrimary: 10107,
  BSONObjectTooLarge: 10334,
  DuplicateKey: 11000,
  Location31254: 31254,
  Location40324: 40324,
  FailPointSetFailed: 266,
  APIVersionError: 322,
  APIStrictError: 323,
  // Codes tests inject with the failCommand fail point, named as mongod names them.
  HostUnreachable: 6,
  HostNotFound: 7,
  AuthenticationFailed: 18,
  LockTimeout: 24,
  WriteConcernFailed: 64,
  NetworkTimeout: 89,
  ShutdownInProgress: 91,
  WriteConflict: 112,
  FailedToSatisfyReadPreference: 133,
  ReadConcernMajorityNotAvailableYet: 134,
  StaleEpoch: 150,
  PrimarySteppedDown: 189,
  RetryChangeStream: 234,
  SnapshotTooOld: 239,
  SnapshotUnavailable: 246,
  StaleChunkHistory: 250,
  NoSuchTransaction: 251,
  ExceededTimeLimit: 262,
  SocketException: 9001,
  InterruptedAtShutdown: 11600,
  Interrupted: 11601,
  InterruptedDueToReplStateChange: 11602,
  StaleConfig: 13388,
  NotPrimaryNoSecondaryOk: 13435,
  NotPrimaryOrSecondary: 13436,
} as const;

const codeNames = new Map<number, string>(Object.entries(ErrorCode).map(([name, code]) => [code, name]));

/** An error a command answers with `{ok: 0, errmsg, code, codeName, ...extra}`. */
export class CommandError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'CommandError';
  }

  get codeName(): string {
    return codeNames.get(this.code) ?? `Location${this.code}`;
  }

  /** The error fields of a reply or of a `writeErrors` entry. */
  toDocument(): Record<string, unknown> {
    return { errmsg: this.message, code: this.code, codeName: this.codeName, ...this.extra };
  }
}

/**
 * A feature MongoDB has and the engine does not implement: refused with the
 * code MongoDB gives such a request, and a message that says so plainly (the
 * conformance report counts failures by this wording).
 */
export function refusal(code: number, what: string, note = ''): CommandError {
  return new CommandError(code, `${what} is not supported by the embedded engine${note ? ` (${note})` : ''}`);
}

/** Turns anything a command throws into a CommandError (mingo's errors are bad input). */
export function toCommandError(error: unknown): CommandError {
  if (error instanceof CommandError) return error;
  if (error instanceof MingoError) {
    // mingo runs no JavaScript (scriptEnabled is off): $function and $accumulator end up here.
    if (/scriptEnabled/.test(error.message)) return refusal(ErrorCode.BadValue, 'Server-side JavaScript ($where, $function, $accumulator)');
    return new CommandError(ErrorCode.BadValue, error.message);
  }
  const message = error instanceof Error ? error.message : String(error);
  return new CommandError(ErrorCode.InternalError, message);
}
