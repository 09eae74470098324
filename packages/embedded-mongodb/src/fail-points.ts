import type { Document } from 'bson';

import { CommandError, ErrorCode, refusal } from './errors.js';
import { isNumber, isPlainObject, numberOf, typeName } from './values.js';

type Mode =
  | { kind: 'off' }
  | { kind: 'alwaysOn' }
  /** Fires on the next `remaining` evaluations (and once more when set to 0, as mongod's counter does). */
  | { kind: 'times'; remaining: number }
  /** Lets `remaining` evaluations pass, then fires on every one. */
  | { kind: 'skip'; remaining: number }
  | { kind: 'random'; probability: number };

const INT32_MAX = 2 ** 31 - 1;

/**
 * One of mongod's fail points: a mode that says when it fires and the data
 * the code that evaluates it reads. An evaluation whose condition rejects the
 * data neither fires nor counts against `times` or `skip`, as in mongod's
 * FailPoint::executeIf.
 */
export class FailPoint {
  private mode: Mode = { kind: 'off' };
  private data: Document = {};
  /** How many times it fired since the server started (configureFailPoint answers it as `count`). */
  private timesEntered = 0;

  constructor(private readonly random: () => number = Math.random) {}

  /** Sets the mode and data from a configureFailPoint command; answers the count before the change. */
  configure(command: Document): number {
    const mode = parseMode(command.mode);
    const data = command.data;
    if (data !== undefined && !isPlainObject(data))
      throw new CommandError(ErrorCode.TypeMismatch, "the 'data' option must be a JSON object");
    this.mode = mode;
    this.data = data ?? {};
    return this.timesEntered;
  }

  /** The data when the fail point fires for an evaluation whose condition accepts it; undefined otherwise. */
  evaluate(applies: (data: Document) => boolean): Document | undefined {
    const mode = this.mode;
    if (mode.kind === 'off' || !applies(this.data)) return undefined;
    let fires: boolean;
    switch (mode.kind) {
      case 'alwaysOn':
        fires = true;
        break;
      case 'random':
        fires = this.random() < mode.probability;
        break;
      case 'times':
        mode.remaining--;
        if (mode.remaining <= 0) this.mode = { kind: 'off' };
        fires = true;
        break;
      case 'skip':
        fires = mode.remaining <= 0 || --mode.remaining < 0;
        break;
    }
    if (fires) this.timesEntered++;
    return fires ? this.data : undefined;
  }
}

function parseMode(mode: unknown): Mode {
  if (mode === undefined) throw new CommandError(ErrorCode.IllegalOperation, "When setting a failpoint, you must supply a 'mode'");
  if (mode === 'off') return { kind: 'off' };
  if (mode === 'alwaysOn') return { kind: 'alwaysOn' };
  if (typeof mode === 'string') throw new CommandError(ErrorCode.BadValue, `unknown mode: ${mode}`);
  if (!isPlainObject(mode)) throw new CommandError(ErrorCode.TypeMismatch, "'mode' must be a string or JSON object");
  if ('times' in mode) return { kind: 'times', remaining: counter(mode.times, 'times') };
  if ('skip' in mode) return { kind: 'skip', remaining: counter(mode.skip, 'skip') };
  if ('activationProbability' in mode) {
    const p = mode.activationProbability;
    if (!isNumber(p)) {
      throw new CommandError(ErrorCode.TypeMismatch, "the 'activationProbability' option to 'mode' must be a double between 0 and 1");
    }
    const probability = numberOf(p);
    if (!(probability >= 0 && probability <= 1)) {
      throw new CommandError(ErrorCode.BadValue, `activationProbability must be between 0.0 and 1.0; found ${probability}`);
    }
    return { kind: 'random', probability };
  }
  throw new CommandError(
    ErrorCode.BadValue,
    "'mode' must be one of 'off', 'alwaysOn', '{times:n}', '{skip:n}' or '{activationProbability:p}'",
  );
}

/** `times` and `skip`: a whole number from 0 to 2^31 - 1. */
function counter(value: unknown, name: string): number {
  const n = isNumber(value) ? numberOf(value) : NaN;
  if (!Number.isInteger(n)) {
    throw new CommandError(ErrorCode.TypeMismatch, `Expected field "${name}" to have numeric type, but found ${typeName(value)}`);
  }
  if (n < 0) throw new CommandError(ErrorCode.BadValue, `'${name}' option to 'mode' must be positive`);
  if (n > INT32_MAX) throw new CommandError(ErrorCode.BadValue, `'${name}' option to 'mode' is too large`);
  return n;
}

/** The fail points the engine has: those the driver specifications' tests set, with mongod's effects. */
export class FailPoints {
  /** Fails, delays or cuts the connection of chosen commands before they run; adds write concern errors after. */
  readonly failCommand = new FailPoint();
  /** Fails a getMore once its cursor is found (so that the error is known to come from a change stream). */
  readonly failGetMoreAfterCursorCheckout = new FailPoint();

  get(name: string): FailPoint {
    if (name === 'failCommand' || name === 'failGetMoreAfterCursorCheckout') return this[name];
    throw refusal(ErrorCode.FailPointSetFailed, `The fail point '${name}'`);
  }
}
