import { getOperationAST, parse } from 'graphql';
import { describe, expect, it } from 'vitest';

import { buildSchema } from '../../src/graphql/schema.js';
import { COST_MODEL } from '../../src/operations/limits.js';
import { operationCost } from '../../src/operations/operation-cost.js';

const schema = buildSchema([]);

/** The cost of the one operation of `text`, with these variables. */
function cost(text: string, variables?: Record<string, unknown>) {
  const document = parse(text);
  return operationCost(schema, document, getOperationAST(document)!, variables, COST_MODEL);
}

describe('the cost of an operation', () => {
  it('counts one per field and nothing for meta fields', () => {
    expect(cost('{ quota __typename }')).toEqual({ cost: 1, readsVariables: false });
  });

  it('sizes a page by first or last, as a literal, a variable or the default of 100, capped at 100', () => {
    // A list costs its length times (1 + its selection).
    expect(cost('{ conversations(first: 5) { nodes { id } } }')!.cost).toBe(1 + 5 * 2);
    expect(cost('query Page($n: Int) { conversations(last: $n) { nodes { id } } }', { n: 7 })).toEqual({
      cost: 1 + 7 * 2,
      readsVariables: true,
    });
    expect(cost('{ conversations { nodes { id } } }')!.cost).toBe(1 + 100 * 2);
    expect(cost('{ conversations(first: 100000) { nodes { id } } }')!.cost).toBe(1 + 100 * 2);
  });

  it('multiplies a list by its selection, an unsized one counted as 10: a page with messages costs 3 301', () => {
    expect(cost('{ conversations(first: 100) { nodes { messages { role } } } }')!.cost).toBe(1 + 100 * (1 + 10 * 2));
    expect(cost('{ conversations(first: 100) { nodes { messages { role content } } edges { cursor } } }')!.cost).toBe(3_301);
  });

  it('sizes nodes(ids:) by the ids given', () => {
    expect(cost('query Many($ids: [ID!]!) { nodes(ids: $ids) { id } }', { ids: ['a', 'b', 'c'] })).toEqual({
      cost: 3 * 2,
      readsVariables: true,
    });
  });

  it('prices a fragment spread many times once per size, and answers null for variables that do not coerce', () => {
    const spreads = Array.from({ length: 50 }, () => '...F').join(' ');
    expect(cost(`{ conversations(first: 2) { nodes { ${spreads} } } } fragment F on Conversation { name number }`)!.cost).toBe(
      1 + 2 * (1 + 50 * 2),
    );
    expect(cost('query Page($n: Int) { conversations(first: $n) { nodes { id } } }', { n: 'seven' })).toBeNull();
  });
});
