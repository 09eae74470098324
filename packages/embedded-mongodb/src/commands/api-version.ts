import type { Document } from 'bson';

import { CommandError, ErrorCode } from '../errors.js';
import { typeName } from '../values.js';

/**
 * The commands of Stable API version 1 (canonical names), as MongoDB 7.0
 * declares them; with `apiStrict: true` any other command is refused.
 */
const API_VERSION_1 = new Set([
  'abortTransaction',
  'aggregate',
  'authenticate',
  'collMod',
  'commitTransaction',
  'count',
  'create',
  'createIndexes',
  'delete',
  'drop',
  'dropDatabase',
  'dropIndexes',
  'endSessions',
  'find',
  'findAndModify',
  'getMore',
  'hello',
  'insert',
  'killCursors',
  'listCollections',
  'listDatabases',
  'listIndexes',
  'ping',
  'refreshSessions',
  'saslContinue',
  'saslStart',
  'update',
]);

function checkType(body: Document, field: string, type: 'string' | 'boolean'): void {
  const value: unknown = body[field];
  if (value === undefined || typeof value === type) return;
  const expected = type === 'string' ? 'string' : 'bool';
  throw new CommandError(
    ErrorCode.TypeMismatch,
    `BSON field '${field}' is the wrong type '${typeName(value)}', expected type '${expected}'`,
  );
}

/** Checks a command's Stable API parameters as mongod does before running it (`command`: its canonical name). */
export function checkApiParameters(command: string, body: Document): void {
  checkType(body, 'apiVersion', 'string');
  checkType(body, 'apiStrict', 'boolean');
  checkType(body, 'apiDeprecationErrors', 'boolean');
  const version = body.apiVersion as string | undefined;
  if ((body.apiStrict !== undefined || body.apiDeprecationErrors !== undefined) && version === undefined) {
    throw new CommandError(4886600, 'Provided apiStrict and/or apiDeprecationErrors without passing apiVersion');
  }
  if (version === undefined) return;
  if (version === '2') throw new CommandError(ErrorCode.APIVersionError, 'Cannot accept API version 2');
  if (version !== '1') throw new CommandError(ErrorCode.APIVersionError, 'API version must be "1"');
  if (body.apiStrict === true && !API_VERSION_1.has(command)) {
    throw new CommandError(
      ErrorCode.APIStrictError,
      `Provided apiStrict:true, but the command ${command} is not in API Version 1. Information on supported commands and migrations in API Version 1 can be found at https://dochub.mongodb.org/core/manual-versioned-api.`,
    );
  }
}
