/**
 * Balances are stored as integer ten-thousandths of a point: adding and
 * subtracting integers never drifts the way binary floating point does.
 */
export const UNITS_PER_POINT = 10_000;

export function pointsToUnits(points: number): number {
  return Math.round(points * UNITS_PER_POINT);
}

export function unitsToPoints(units: number): number {
  return units / UNITS_PER_POINT;
}
