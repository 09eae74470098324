import { Query } from 'mingo';
import type { Options } from 'mingo/types';
import { CommandError, ErrorCode } from './errors.js';
import { isPlainObject } from './values.js';

/** Clients reach the engine over the network, so `$where`, `$function` and `$accumulator` stay off. */
export const MINGO_OPTIONS: Partial<Options> = { scriptEnabled: false };

/** Compiles a query filter with mingo, rejecting what MongoDB rejects before matching. */
export function compileFilter(filter: unknown): Query {
  if (filter === undefined || filter === null) return new Query({}, MINGO_OPTIONS);
  if (!isPlainObject(filter)) throw new CommandError(ErrorCode.TypeMismatch, "'filter' must be an object");
  return new Query(filter, MINGO_OPTIONS);
}
