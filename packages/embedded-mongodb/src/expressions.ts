import { evalExpr } from 'mingo/core';
import type { AnyObject, Options } from 'mingo/types';

import { CommandError } from './errors.js';
import { compareValues, typeRank } from './values.js';

// Aggregation expressions that mingo gives query semantics to (same-type
// comparisons, arrays traversed), with MongoDB's: every value has its place in
// one order across types.

/**
 * Orders two values as MongoDB's expressions do: the BSON sort order, where a
 * missing value (`undefined`) comes after MinKey and before null.
 */
function compareExpressionValues(a: unknown, b: unknown): number {
  if (a === undefined || b === undefined) {
    if (a === b) return 0;
    const other = a === undefined ? b : a;
    const missingVersusOther = typeRank(other) === 1 ? 1 : -1;
    return a === undefined ? missingVersusOther : -missingVersusOther;
  }
  return compareValues(a, b);
}

type Expression = (obj: AnyObject, expr: unknown, options: Options) => unknown;

function comparison(name: string, answer: (order: number) => boolean | number): Expression {
  return (obj, expr, options) => {
    const args = Array.isArray(expr) ? expr : [expr];
    if (args.length !== 2) throw new CommandError(16020, `Expression ${name} takes exactly 2 arguments. ${args.length} were passed in.`);
    const [a, b] = evalExpr(obj, args, options) as [unknown, unknown];
    return answer(Math.sign(compareExpressionValues(a, b)));
  };
}

export const COMPARISON_EXPRESSIONS = {
  $eq: comparison('$eq', (order) => order === 0),
  $ne: comparison('$ne', (order) => order !== 0),
  $gt: comparison('$gt', (order) => order > 0),
  $gte: comparison('$gte', (order) => order >= 0),
  $lt: comparison('$lt', (order) => order < 0),
  $lte: comparison('$lte', (order) => order <= 0),
  $cmp: comparison('$cmp', (order) => order),
};
