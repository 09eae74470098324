import { getOperationAST, parse } from 'graphql';
import { describe, expect, it } from 'vitest';

import { Failure } from '../../../src/errors.js';
import { OPERATION_LIMITS } from '../../../src/limits.js';
import { checkOperationCost, COST_MODEL } from '../../../src/operations/limits.js';
import { operationCost } from '../../../src/operations/operation-cost.js';
import { gatewaySchema } from '../support/fakes.js';

const schema = gatewaySchema();

function costOf(text: string, variables?: Record<string, unknown>) {
  const document = parse(text);
  return operationCost(schema, document, getOperationAST(document)!, variables, COST_MODEL);
}

function check(text: string, variables?: Record<string, unknown>) {
  const document = parse(text);
  return () => checkOperationCost(schema, document, getOperationAST(document)!, variables);
}

describe('operationCost', () => {
  it('prices a balance read at 1', () => {
    expect(costOf('{ quota }')).toEqual({ cost: 1, readsVariables: false });
  });

  it('prices a page of 100 conversations with their messages at 3 301, as limits.ts states', () => {
    expect(costOf('{ conversations { edges { node { name messages { role content } } } } }')?.cost).toBe(3_301);
  });

  it('sizes a page by a literal `first`', () => {
    expect(costOf('{ conversations(first: 3) { nodes { name } } }')?.cost).toBe(1 + 3 * 2);
  });

  it('sizes a page by `last` as well, and by the larger of the two when both are given', () => {
    expect(costOf('{ conversations(last: 4) { nodes { name } } }')?.cost).toBe(1 + 4 * 2);
    expect(costOf('{ conversations(first: 2, last: 7) { nodes { name } } }')?.cost).toBe(1 + 7 * 2);
  });

  it(`caps a page at the most one page holds (${COST_MODEL.maxPageSize})`, () => {
    expect(costOf('{ conversations(first: 5000) { nodes { name } } }')?.cost).toBe(1 + COST_MODEL.maxPageSize * 2);
  });

  it('sizes a page by a variable, and says that it read one', () => {
    const text = 'query Page($n: Int) { conversations(first: $n) { nodes { name } } }';
    expect(costOf(text, { n: 10 })).toEqual({ cost: 1 + 10 * 2, readsVariables: true });
    expect(costOf(text, { n: 20 })).toEqual({ cost: 1 + 20 * 2, readsVariables: true });
  });

  it('prices `nodes(ids:)` by the length of the list given', () => {
    expect(costOf('{ nodes(ids: ["a", "b", "c"]) { id } }')?.cost).toBe(3 * 2);
    expect(costOf('query N($ids: [ID!]!) { nodes(ids: $ids) { id } }', { ids: ['a', 'b'] })).toEqual({ cost: 2 * 2, readsVariables: true });
  });

  it(`counts an unsized list (messages) as ${COST_MODEL.assumedListSize} items`, () => {
    expect(costOf('{ conversation(number: 1) { messages { role } } }')?.cost).toBe(1 + COST_MODEL.assumedListSize * 2);
  });

  it('prices meta fields at nothing', () => {
    expect(costOf('{ __typename quota }')?.cost).toBe(1);
    expect(costOf('{ __schema { types { name } } }')?.cost).toBe(0);
  });

  it('prices a fragment as if written in place, inline or named', () => {
    const inPlace = costOf('{ conversations(first: 2) { nodes { name model } } }')!.cost;
    expect(costOf('{ conversations(first: 2) { nodes { ...F } } } fragment F on Conversation { name model }')!.cost).toBe(inPlace);
    expect(costOf('{ conversations(first: 2) { nodes { ... on Conversation { name model } } } }')!.cost).toBe(inPlace);
  });

  it('prices fragments that spread each other many times over once each', () => {
    // 2^59 spreads if each were priced again: an implementation that did would never end, and the test would time out.
    const levels = 60;
    const fragments = Array.from({ length: levels }, (_, n) =>
      n === levels - 1 ? `fragment F${n} on Query { quota }` : `fragment F${n} on Query { ...F${n + 1} ...F${n + 1} }`,
    ).join('\n');
    expect(costOf(`{ ...F0 }\n${fragments}`)?.cost).toBe(2 ** (levels - 1));
  });

  it('answers null when the variables do not fit the operation: execution refuses them', () => {
    expect(costOf('query Page($n: Int!) { conversations(first: $n) { nodes { name } } }', { n: 'ten' })).toBeNull();
    expect(costOf('query Page($n: Int!) { conversations(first: $n) { nodes { name } } }', {})).toBeNull();
  });
});

describe('checkOperationCost', () => {
  it(`lets an operation of cost ${OPERATION_LIMITS.cost} or less through`, () => {
    expect(check('{ conversations { edges { node { name messages { role content } } } } }')).not.toThrow();
  });

  it('refuses an operation over the limit with the invalid-operation failure (HTTP 400), naming the cost', () => {
    const text =
      '{ a: conversations { edges { node { messages { role content } } } } b: conversations { edges { node { messages { role content } } } } }';
    let thrown: unknown;
    try {
      check(text)();
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(Failure);
    const failure = thrown as Failure;
    expect(failure.kind).toBe('invalidOperation');
    expect(failure.extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(failure.message).toBe(`Operation cost limit of ${OPERATION_LIMITS.cost} exceeded, found 6402.`);
  });

  it('prices an operation that reads variables again for each request', () => {
    const text =
      'query Page($n: Int) { a: conversations(first: $n) { nodes { messages { role content } } } b: conversations(first: $n) { nodes { messages { role content } } } }';
    const document = parse(text);
    const operation = getOperationAST(document)!;
    expect(() => checkOperationCost(schema, document, operation, { n: 1 })).not.toThrow();
    expect(() => checkOperationCost(schema, document, operation, { n: 100 })).toThrow(/cost limit/);
    expect(() => checkOperationCost(schema, document, operation, { n: 1 })).not.toThrow();
  });

  it('leaves variables that do not coerce to execution', () => {
    expect(check('query Page($n: Int!) { conversations(first: $n) { nodes { name } } }', { n: 'x' })).not.toThrow();
  });
});
