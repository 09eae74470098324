import type { GraphQLError, GraphQLFormattedError } from 'graphql';

import {
  badUserInput,
  codeOf,
  codeOfKind,
  credentialsUncheckable,
  databaseUnavailable,
  Failure,
  type FailureKind,
  internal,
  notAvailable,
  rateLimited,
  responseTooLarge,
} from '../errors.js';

/** How a failure of one kind is read back from an error of a GraphQL answer (its code is the kind's). */
type ReadBack = (error: GraphQLFormattedError) => Failure | undefined;

/**
 * The kinds an operation run for a legacy endpoint may fail with and still be answered in the
 * endpoint's own words (anything else is internal), each with how it is read back from the answer
 * of a remote gateway (the REST sidecar's), where only the error's code and extensions arrive.
 * The one list both runners go by: in this process (`in-process-runner.ts`) and remote
 * (`remote-runner.ts`).
 */
const OPERATION_FAILURES = {
  rateLimited: ({ extensions }) => {
    const retryAfter = extensions?.retryAfter;
    return rateLimited(typeof retryAfter === 'number' && retryAfter >= 1 ? Math.ceil(retryAfter) : 1);
  },
  databaseUnavailable: () => databaseUnavailable(),
  // The remote gateway could not check the credentials (its identity provider's keys are out of reach).
  credentialsUncheckable: ({ extensions }) => {
    const retryAfter = Number(extensions?.retryAfter);
    return credentialsUncheckable(Number.isSafeInteger(retryAfter) && retryAfter >= 1 ? retryAfter : 5);
  },
  notAvailable: ({ message }) => notAvailable(message),
  badUserInput: ({ message }) => badUserInput(message),
  responseTooLarge: ({ extensions }) => {
    const maxBytes = extensions?.maxBytes;
    return typeof maxBytes === 'number' ? responseTooLarge(maxBytes) : undefined;
  },
} as const satisfies Partial<Record<FailureKind, ReadBack>>;

export type OperationFailureKind = keyof typeof OPERATION_FAILURES;

/** The kinds of the table, for a test to go through. */
export const OPERATION_FAILURE_KINDS = Object.keys(OPERATION_FAILURES) as OperationFailureKind[];

const isOperationFailure = (kind: FailureKind): kind is OperationFailureKind => Object.hasOwn(OPERATION_FAILURES, kind);

/** The table by code: each of its kinds has a code of its own. */
const READ_BACK_BY_CODE = new Map<string, ReadBack>(OPERATION_FAILURE_KINDS.map((kind) => [codeOfKind(kind), OPERATION_FAILURES[kind]]));

/**
 * The failure an error of an operation run in this process stands for: the failure it is or a
 * resolver threw, when of a kind in the table, or internal. A lost database is already a failure
 * here: the execution named it so (`db/database-failures.ts`), so nothing asks the driver again.
 */
export function failureOfOperation(error: GraphQLError): Failure {
  const failure = error instanceof Failure ? error : error.originalError instanceof Failure ? error.originalError : undefined;
  return failure !== undefined && isOperationFailure(failure.kind) ? failure : internal(error);
}

/** The failure an operation's error stands for, read back from a remote gateway's answer by its code; anything else is internal. */
export function failureOfAnswer(error: GraphQLFormattedError): Failure {
  return READ_BACK_BY_CODE.get(codeOf(error))?.(error) ?? internal(new Error(`operation failed: ${error.message}`));
}
