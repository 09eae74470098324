import type { Document } from 'bson';

import type { Engine } from '../engine.js';
import { CommandError, ErrorCode } from '../errors.js';
import { isNumber, isPlainObject, numberOf } from '../values.js';
import type { CommandRequest } from './request.js';

/**
 * mongod's failCommand fail point, as its command dispatch evaluates it:
 * once before a command runs (after it is parsed and its session read), to
 * block it, cut its connection or fail it; and once after a command that takes
 * a write concern ran, to report a write concern error in place of waiting for
 * one. The two evaluations count separately against `times` and `skip`.
 */

/** Thrown to end the connection without a reply. */
export class CloseConnection extends Error {
  constructor() {
    super("connection closed by the 'failCommand' fail point");
  }
}

const FAILED = "Failing command via 'failCommand' failpoint";

/** What the fail point knows of a command: its canonical name, namespace and connection. */
export interface FailCommandTarget {
  command: string;
  ns: string;
  connectionId: number;
  /** The application name the connection's first hello declared. */
  appName: string;
  /** The canonical name of a command name or alias, as failCommands lists them. */
  canonical: (name: string) => string;
}

/** The target of a request: `command` is its canonical name, `canonical` turns an alias into one. */
export function failCommandTarget(
  engine: Engine,
  request: CommandRequest,
  command: string,
  canonical: (name: string) => string,
): FailCommandTarget {
  // A getMore names its cursor's collection in `collection` (mongod's GetMoreCommandRequest namespace).
  const collection: unknown = command === 'getMore' ? request.body.collection : request.body[request.name];
  return {
    command,
    ns: typeof collection === 'string' ? `${request.db}.${collection}` : request.db,
    connectionId: request.connectionId,
    appName: engine.connections.get(request.connectionId)?.appName ?? '',
    canonical,
  };
}

/** Whether the data targets this command (mongod's shouldActivateFailCommandFailPoint; every client here is external). */
function targets(data: Document, target: FailCommandTarget): boolean {
  if (target.command === 'configureFailPoint') return false;
  if ('threadName' in data && data.threadName !== `conn${target.connectionId}`) return false;
  if ('appName' in data && data.appName !== target.appName) return false;
  if ('namespace' in data && data.namespace !== target.ns) return false;
  if ('failAllCommands' in data) return true;
  const names: unknown = data.failCommands;
  return Array.isArray(names) && names.some((name) => typeof name === 'string' && target.canonical(name) === target.command);
}

/** An integer field as mongod's bsonExtractIntegerField reads it: a whole number of any numeric type. */
function integerField(data: Document, field: string): number | undefined {
  const value: unknown = data[field];
  const n = isNumber(value) ? numberOf(value) : NaN;
  return Number.isInteger(n) ? n : undefined;
}

function takeLabels(request: CommandRequest, data: Document): void {
  if (Array.isArray(data.errorLabels)) request.errorLabelsOverride = data.errorLabels.filter((label) => typeof label === 'string');
}

/**
 * Before the command runs. Returns a promise when the command is blocked
 * (it runs once the promise resolves), throws CloseConnection or the error
 * to answer with, or returns undefined: run the command now.
 */
export function failBeforeRunning(engine: Engine, request: CommandRequest, target: FailCommandTarget): Promise<void> | undefined {
  let close = false;
  let block = false;
  let code: number | undefined;
  const data = engine.failPoints.failCommand.evaluate((data) => {
    close = data.closeConnection === true;
    block = data.blockConnection === true;
    code = integerField(data, 'errorCode');
    return targets(data, target) && (close || block || code !== undefined);
  });
  if (!data) return undefined;
  takeLabels(request, data);
  const fail = (): void => {
    if (close) throw new CloseConnection();
    if (code === undefined) return;
    const extraInfo: unknown = data.errorExtraInfo;
    throw new CommandError(code, FAILED, isPlainObject(extraInfo) ? extraInfo : {});
  };
  if (!block) {
    fail();
    return undefined;
  }
  const blockTimeMS = integerField(data, 'blockTimeMS');
  if (blockTimeMS === undefined)
    throw new CommandError(ErrorCode.InvalidOptions, "must specify 'blockTimeMS' when 'blockConnection' is true");
  if (blockTimeMS < 0) throw new CommandError(ErrorCode.InvalidOptions, "'blockTimeMS' must be non-negative");
  // A blocked command is not killed when its client goes away: it still runs, as on mongod.
  return new Promise<void>((resolve) => setTimeout(resolve, blockTimeMS)).then(fail);
}

/** After a command that takes a write concern succeeded: the write concern error to report, if the fail point gives one. */
export function writeConcernErrorAfterRunning(
  engine: Engine,
  request: CommandRequest,
  target: FailCommandTarget,
  hasWriteConcernError: boolean,
): unknown {
  const data = engine.failPoints.failCommand.evaluate(
    (data) => targets(data, target) && data.writeConcernError !== undefined && !hasWriteConcernError,
  );
  if (!data) return undefined;
  takeLabels(request, data);
  return data.writeConcernError;
}

/**
 * mongod's failGetMoreAfterCursorCheckout: fails a getMore on the cursors of
 * `ns` once the cursor is found, with `errorCode` (default InternalError).
 */
export function failGetMoreAfterCheckout(engine: Engine, request: CommandRequest, ns: string): void {
  const target = { ...failCommandTarget(engine, request, 'getMore', (name) => name), ns };
  const data = engine.failPoints.failGetMoreAfterCursorCheckout.evaluate((data) => targets({ ...data, failCommands: ['getMore'] }, target));
  if (!data) return;
  throw new CommandError(integerField(data, 'errorCode') ?? ErrorCode.InternalError, "Hit the 'failGetMoreAfterCursorCheckout' failpoint");
}
