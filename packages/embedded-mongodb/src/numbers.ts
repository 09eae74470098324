import { Decimal128, Double, Int32, Long } from 'bson';

import { numberOf, typeName } from './values.js';

/**
 * Arithmetic with MongoDB's result types: int32 with int32 stays int32 unless
 * it overflows (then int64), int64 stays int64 (overflow is an error), a double
 * makes a double and a decimal a decimal.
 */
const WIDTH: Record<string, number> = { int: 0, long: 1, double: 2, decimal: 3 };

function widest(a: unknown, b: unknown): string {
  return WIDTH[typeName(a)]! >= WIDTH[typeName(b)]! ? typeName(a) : typeName(b);
}

function bigOf(value: unknown): bigint {
  return typeName(value) === 'long' ? (value as Long).toBigInt() : BigInt(numberOf(value));
}

/** undefined when an int64 result overflows. */
export function addNumbers(a: unknown, b: unknown): unknown {
  return combine(
    a,
    b,
    (x, y) => x + y,
    (x, y) => x + y,
    decimalAdd,
  );
}

export function multiplyNumbers(a: unknown, b: unknown): unknown {
  return combine(
    a,
    b,
    (x, y) => x * y,
    (x, y) => x * y,
    decimalMultiply,
  );
}

function combine(
  a: unknown,
  b: unknown,
  integer: (x: bigint, y: bigint) => bigint,
  float: (x: number, y: number) => number,
  decimal: (x: Decimal, y: Decimal) => Decimal,
): unknown {
  switch (widest(a, b)) {
    case 'int': {
      const result = integer(bigOf(a), bigOf(b));
      if (result >= -2147483648n && result <= 2147483647n) return new Int32(Number(result));
      return BigInt.asIntN(64, result) === result ? Long.fromBigInt(result) : undefined;
    }
    case 'long': {
      const result = integer(bigOf(a), bigOf(b));
      return BigInt.asIntN(64, result) === result ? Long.fromBigInt(result) : undefined;
    }
    case 'double':
      return new Double(float(numberOf(a), numberOf(b)));
    default:
      return toDecimal128(decimal(decimalOf(a), decimalOf(b)));
  }
}

/** A finite decimal as coefficient × 10^exponent; special values as their string. */
type Decimal = { coefficient: bigint; exponent: number } | { special: string };

function decimalOf(value: unknown): Decimal {
  const text =
    typeName(value) === 'decimal'
      ? (value as Decimal128).toString()
      : typeName(value) === 'long'
        ? (value as Long).toString()
        : String(numberOf(value));
  const match = /^([+-]?)(\d*)(?:\.(\d*))?(?:E([+-]?\d+))?$/i.exec(text);
  if (!match) return { special: text };
  const [, sign, whole = '', fraction = '', exponent = '0'] = match;
  const coefficient = BigInt(`${sign}${whole}${fraction}` || '0');
  return { coefficient, exponent: Number(exponent) - fraction.length };
}

function align(x: Extract<Decimal, { coefficient: bigint }>, y: Extract<Decimal, { coefficient: bigint }>): [bigint, bigint, number] {
  const exponent = Math.min(x.exponent, y.exponent);
  return [x.coefficient * 10n ** BigInt(x.exponent - exponent), y.coefficient * 10n ** BigInt(y.exponent - exponent), exponent];
}

function decimalAdd(x: Decimal, y: Decimal): Decimal {
  if ('special' in x || 'special' in y) return { special: 'NaN' };
  const [a, b, exponent] = align(x, y);
  return { coefficient: a + b, exponent };
}

function decimalMultiply(x: Decimal, y: Decimal): Decimal {
  if ('special' in x || 'special' in y) return { special: 'NaN' };
  return { coefficient: x.coefficient * y.coefficient, exponent: x.exponent + y.exponent };
}

function toDecimal128(value: Decimal): Decimal128 {
  if ('special' in value) return Decimal128.fromString(value.special);
  return Decimal128.fromString(`${value.coefficient}E${value.exponent}`);
}
