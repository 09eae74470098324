import { type DocumentNode, getOperationAST, type OperationDefinitionNode, parse } from 'graphql';
import { describe, expect, it } from 'vitest';

import { compiledOperationCache } from '../../src/graphql/compiled-queries.js';
import { buildSchema } from '../../src/graphql/schema.js';

const schema = buildSchema();
const operationOf = (text: string): [DocumentNode, OperationDefinitionNode] => {
  const document = parse(text);
  return [document, getOperationAST(document)!];
};

describe('the compiled operation cache', () => {
  it('compiles an operation once, whichever path asks for it', () => {
    const compiledFor = compiledOperationCache(schema);
    const [document, operation] = operationOf('{ quota conversations(first: 2) { nodes { id } } }');
    const first = compiledFor(document, operation);
    expect(first?.query.query).toBeTypeOf('function');
    expect(compiledFor(document, operation)).toBe(first);
  });

  it('holds at most its bound, the least recently used let go and compiled again when it comes back', () => {
    const compiledFor = compiledOperationCache(schema, 2);
    const [a, b, c] = ['{ quota }', '{ conversations(first: 1) { totalCount } }', '{ giftPackage { cert } }'].map(operationOf);
    const firstA = compiledFor(...a!);
    const firstB = compiledFor(...b!);
    expect(compiledFor(...a!)).toBe(firstA);
    compiledFor(...c!);
    expect(compiledFor(...a!)).toBe(firstA);
    expect(compiledFor(...b!)).not.toBe(firstB);
  });

  it('answers null for what does not run compiled: mutations', () => {
    const compiledFor = compiledOperationCache(schema);
    expect(compiledFor(...operationOf('mutation { deleteConversation(id: 1) { ok } }'))).toBeNull();
  });
});
