import Big from 'big.js';

/**
 * Balances are stored as integer micro-points (millionths of a point), the six decimals a Chat
 * Nio balance has (`DECIMAL(24,6)`): adding and subtracting integers never drifts the way binary
 * floating point does. A JavaScript number holds such an integer exactly up to 2^53 micro-points,
 * about nine billion points.
 */
export const MICROS_PER_POINT = 1_000_000;

/** Decimals a balance keeps. */
export const BALANCE_DECIMALS = 6;

/**
 * The largest balance, either way, that a seed or an import may give: far above any real one.
 * Below 2^32 points a number (a JSON or GraphQL `Float`) still tells every micro-point apart, so
 * each such balance prints as its exact decimals.
 */
export const MAX_BALANCE_POINTS = 1_000_000_000;

/**
 * Points as micro-points, exactly. The amount is read as decimal text (a number's shortest
 * decimal text, which is what JSON wrote), never multiplied as a float: 12.5 is 12 500 000 and
 * 0.000001 is 1. Null for an amount with more than six decimals, or too large to hold exactly.
 */
export function exactMicros(points: number | string): number | null {
  const micros = decimal(points)?.times(MICROS_PER_POINT);
  if (micros === undefined || !micros.eq(micros.round(0, Big.roundDown))) return null;
  return safeInteger(micros);
}

/**
 * The same, rounded to six decimals (half to even) instead of refused: for amounts that were
 * stored as binary floating point, whose shortest decimal text may have more decimals than the
 * amount ever had. Null only for an amount too large to hold exactly, or not a number.
 */
export function roundedMicros(points: number | string): number | null {
  const micros = decimal(points)?.times(MICROS_PER_POINT).round(0, Big.roundHalfEven);
  return micros === undefined ? null : safeInteger(micros);
}

/** An amount already known to fit (whole points of a purchase or a gift, a checked seed) as micro-points; throws for one `exactMicros` refuses. */
export function pointsToMicros(points: number): number {
  const micros = exactMicros(points);
  if (micros === null) throw new RangeError(`${points} points cannot be held exactly in micro-points`);
  return micros;
}

/**
 * Ten-thousandths of a point, the unit balances were stored in before micro-points, as
 * micro-points: exact for the whole numbers they always were. Null when not a number.
 */
export function microsFromLegacyUnits(units: number): number | null {
  const points = decimal(units)?.div(10_000);
  return points === undefined ? null : roundedMicros(points.toString());
}

/**
 * Micro-points as points: the number nearest to the exact decimal value (one correctly rounded
 * division), so 12 500 000 prints as 12.5 and 3 141 593 as 3.141593, the shortest text of a
 * balance with six decimals or fewer.
 */
export function microsToPoints(micros: number): number {
  return micros / MICROS_PER_POINT;
}

function decimal(value: number | string): Big | undefined {
  if (typeof value === 'number' && !Number.isFinite(value)) return undefined;
  try {
    return new Big(value);
  } catch {
    return undefined;
  }
}

function safeInteger(micros: Big): number | null {
  const value = micros.toNumber();
  // A negative amount that rounds to nothing is 0, not -0.
  return Number.isSafeInteger(value) ? value + 0 : null;
}
