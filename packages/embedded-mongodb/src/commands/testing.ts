import type { Engine } from '../engine.js';
import { CommandError, ErrorCode } from '../errors.js';
import { typeName } from '../values.js';
import type { CommandHandler } from './request.js';

/**
 * configureFailPoint, on the admin database only: sets a fail point's mode
 * and data, and answers how many times it fired before (`count`).
 */
const configureFailPoint: CommandHandler = (engine: Engine, request) => {
  if (request.db !== 'admin')
    throw new CommandError(ErrorCode.Unauthorized, 'configureFailPoint may only be run against the admin database.');
  const name: unknown = request.body.configureFailPoint;
  if (typeof name !== 'string') {
    throw new CommandError(
      ErrorCode.TypeMismatch,
      `BSON field 'configureFailPoint' is the wrong type '${typeName(name)}', expected type 'string'`,
    );
  }
  return { count: engine.failPoints.get(name).configure(request.body), ok: 1 };
};

/** The test commands: they exist only when the server was started with test commands enabled. */
export const testCommands: Record<string, CommandHandler> = { configureFailPoint };
