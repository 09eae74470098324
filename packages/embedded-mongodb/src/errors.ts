import { MingoError } from 'mingo/util';

/** Server error codes used by the engine, with the names MongoDB gives them. */
export const ErrorCode = {
  InternalError: 1,
  BadValue: 2,
  FailedToParse: 9,
  TypeMismatch: 14,
  IllegalOperation: 20,
  NamespaceNotFound: 26,
  IndexNotFound: 27,
  ConflictingUpdateOperators: 40,
  CursorNotFound: 43,
  NamespaceExists: 48,
  CommandNotFound: 59,
  ImmutableField: 66,
  CannotCreateIndex: 67,
  InvalidOptions: 72,
  InvalidNamespace: 73,
  IndexOptionsConflict: 85,
  IndexKeySpecsConflict: 86,
  CannotIndexParallelArrays: 171,
  UnsupportedOpQueryCommand: 352,
  Location31254: 31254,
  Location40324: 40324,
  DuplicateKey: 11000,
  BSONObjectTooLarge: 10334,
} as const;

const codeNames = new Map<number, string>(
  Object.entries(ErrorCode).map(([name, code]) => [code, name]),
);

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
    return codeNames.get(this.code) ?? 'UnknownError';
  }

  /** The error fields of a reply or of a `writeErrors` entry. */
  toDocument(): Record<string, unknown> {
    return { errmsg: this.message, code: this.code, codeName: this.codeName, ...this.extra };
  }
}

/** Turns anything a command throws into a CommandError (mingo's errors are bad input). */
export function toCommandError(error: unknown): CommandError {
  if (error instanceof CommandError) return error;
  if (error instanceof MingoError) return new CommandError(ErrorCode.BadValue, error.message);
  const message = error instanceof Error ? error.message : String(error);
  return new CommandError(ErrorCode.InternalError, message);
}
