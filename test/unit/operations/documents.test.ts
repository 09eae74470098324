import { createHash } from 'node:crypto';

import type { DocumentNode, GraphQLError } from 'graphql';
import { describe, expect, it } from 'vitest';

import { OPERATION_LIMITS } from '../../../src/limits.js';
import { documentIdOf, Documents } from '../../../src/operations/documents.js';
import { gatewaySchema } from '../support/fakes.js';

const documents = () => new Documents(gatewaySchema());

function errorsOf(answer: DocumentNode | readonly GraphQLError[]): readonly GraphQLError[] {
  if ('kind' in answer) throw new Error('expected the document to be refused');
  return answer;
}

describe('documentIdOf', () => {
  it('is the lowercase hex SHA-256 of the text', () => {
    expect(documentIdOf('{ quota }')).toBe(createHash('sha256').update('{ quota }').digest('hex'));
    expect(documentIdOf('{ quota }')).toMatch(/^[0-9a-f]{64}$/);
  });

  it('tells texts apart that differ by one character', () => {
    expect(documentIdOf('{ quota }')).not.toBe(documentIdOf('{ quota  }'));
  });
});

describe('the document stage', () => {
  it('parses and validates a text once: the same text gives the same document object', () => {
    const stage = documents();
    const first = stage.document('{ quota }');
    expect('kind' in first && first.kind).toBe('Document');
    expect(stage.document('{ quota }')).toBe(first);
  });

  it('keys the cache by the id it is given, as the REST table gives one it computed at start', () => {
    const stage = documents();
    const text = '{ quota }';
    const byText = stage.document(text);
    expect(stage.document(text, documentIdOf(text))).toBe(byText);
  });

  it('refuses a text that does not parse with GRAPHQL_PARSE_FAILED and where it failed', () => {
    const [error, ...rest] = errorsOf(documents().document('{ quota '));
    expect(rest).toEqual([]);
    expect(error!.extensions.code).toBe('GRAPHQL_PARSE_FAILED');
    expect(error!.message).toMatch(/^Syntax Error/);
    expect(error!.locations).toEqual([{ line: 1, column: 9 }]);
  });

  it('refuses a document the schema does not have with GRAPHQL_VALIDATION_FAILED, one error per problem', () => {
    const errors = errorsOf(documents().document('{ quota nope alsoNope }'));
    expect(errors.map((error) => error.extensions.code)).toEqual(['GRAPHQL_VALIDATION_FAILED', 'GRAPHQL_VALIDATION_FAILED']);
    expect(errors.map((error) => error.message)).toEqual([
      'Cannot query field "nope" on type "Query". Did you mean "node" or "nodes"?',
      'Cannot query field "alsoNope" on type "Query".',
    ]);
  });

  it('keeps an invalid document’s errors: the same broken text is not parsed or validated again', () => {
    const stage = documents();
    const first = stage.document('{ nope }');
    expect(stage.document('{ nope }')).toBe(first);
  });

  it('keeps a text that does not parse too', () => {
    const stage = documents();
    const first = stage.document('{ quota ');
    expect(stage.document('{ quota ')).toBe(first);
  });

  it('bounds the refusals it keeps: the least recently used goes first', () => {
    const stage = documents();
    // Texts that do not parse: refused as cheaply as can be.
    const oldest = stage.document('{ nope0 ');
    let newest = oldest;
    for (let n = 1; n <= 1_000; n += 1) newest = stage.document(`{ nope${n} `);
    expect(stage.document('{ nope1000 ')).toBe(newest);
    const again = stage.document('{ nope0 ');
    expect(again).not.toBe(oldest);
    expect(errorsOf(again)[0]!.message).toBe(errorsOf(oldest)[0]!.message);
  });

  it('bounds the refusals by the length of their texts as well', () => {
    const stage = documents();
    // Each text is 200 kB of white space around an unknown field: five fill the refusals' 1 M characters.
    const long = (n: number) => `{ nope${n} ${' '.repeat(200_000)}}`;
    const first = stage.document(long(0));
    let newest = first;
    for (let n = 1; n <= 5; n += 1) newest = stage.document(long(n));
    expect(stage.document(long(5))).toBe(newest);
    expect(stage.document(long(0))).not.toBe(first);
  });

  it('keeps valid documents however many invalid ones come after them', () => {
    const stage = documents();
    const valid = stage.document('{ quota }');
    for (let n = 0; n < 2_000; n += 1) stage.document(`{ nope${n} `);
    expect(stage.document('{ quota }')).toBe(valid);
  });

  it('lets a valid document go once a thousand others were used more recently', () => {
    const stage = documents();
    const first = stage.document('query Q0 { quota }');
    for (let n = 1; n <= 1_000; n += 1) stage.document(`query Q${n} { quota }`);
    expect(stage.document('query Q0 { quota }')).not.toBe(first);
  });
});

describe('the stage as Apollo Server’s document store', () => {
  it('answers by the key after Apollo’s schema-hash prefix, the key the other doors use', async () => {
    const stage = documents();
    const text = '{ quota }';
    const valid = stage.document(text);
    await expect(stage.store.get(`apollo:schemahash:${documentIdOf(text)}`)).resolves.toBe(valid);
  });

  it('stores what Apollo parsed and validated, for the other doors to use', async () => {
    const stage = documents();
    const text = '{ quota }';
    const parsed = documents().document(text) as DocumentNode;
    await stage.store.set(`hash:${documentIdOf(text)}`, parsed);
    expect(stage.document(text)).toBe(parsed);
  });

  it('never hands Apollo a refusal as a document', async () => {
    const stage = documents();
    stage.document('{ nope }');
    await expect(stage.store.get(`hash:${documentIdOf('{ nope }')}`)).resolves.toBeUndefined();
  });

  it('forgets what Apollo deletes', async () => {
    const stage = documents();
    const valid = stage.document('{ quota }');
    await stage.store.delete(`hash:${documentIdOf('{ quota }')}`);
    expect(stage.document('{ quota }')).not.toBe(valid);
  });
});

describe('the limits, applied while parsing and validating', () => {
  // `__type` (1), `fields` (2), `type` (3), then each `ofType` one more, and `name` the last: introspection counts too.
  const nested = (depth: number) =>
    `{ __type(name: "Query") { fields { type ${'{ ofType '.repeat(depth - 4)}{ name }${' }'.repeat(depth - 4)} } } }`;

  it(`lets a document ${OPERATION_LIMITS.depth} fields deep through`, () => {
    expect('kind' in documents().document(nested(OPERATION_LIMITS.depth))).toBe(true);
  });

  it(`refuses a document ${OPERATION_LIMITS.depth + 1} fields deep`, () => {
    const [error] = errorsOf(documents().document(nested(OPERATION_LIMITS.depth + 1)));
    expect(error!.extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(error!.message).toMatch(/depth/i);
  });

  it('counts depth through fragments as if they were written in place', () => {
    const deep = `{ __type(name: "Query") { ...F } } fragment F on __Type { fields { type { ofType { ofType { ofType { name } } } } } }`;
    const [error] = errorsOf(documents().document(deep));
    expect(error!.message).toMatch(/depth/i);
  });

  const aliased = (count: number, field = 'quota') => `{ ${Array.from({ length: count }, (_, n) => `a${n}: ${field}`).join(' ')} }`;

  it(`lets ${OPERATION_LIMITS.aliases} aliases through`, () => {
    expect('kind' in documents().document(aliased(OPERATION_LIMITS.aliases))).toBe(true);
  });

  it(`refuses ${OPERATION_LIMITS.aliases + 1} aliases`, () => {
    const [error] = errorsOf(documents().document(aliased(OPERATION_LIMITS.aliases + 1)));
    expect(error!.extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(error!.message).toMatch(/alias/i);
  });

  it('counts aliases of __typename too', () => {
    const [error] = errorsOf(documents().document(aliased(OPERATION_LIMITS.aliases + 1, '__typename')));
    expect(error!.message).toMatch(/alias/i);
  });

  const directed = (count: number) => `{ quota ${'@include(if: true) '.repeat(count)}}`;

  it(`refuses more than ${OPERATION_LIMITS.directives} directives`, () => {
    expect('kind' in documents().document(`{ a: quota @include(if: true) }`)).toBe(true);
    const errors = errorsOf(documents().document(directed(OPERATION_LIMITS.directives + 1)));
    expect(errors.some((error) => /directive/i.test(error.message))).toBe(true);
  });

  // `{ nodes(ids: [` and `]) { id } }` are 12 tokens; each id one more.
  const ofTokens = (tokens: number) => `{ nodes(ids: [${' "x"'.repeat(tokens - 12)} ]) { id } }`;

  it(`parses a document of ${OPERATION_LIMITS.tokens} tokens`, () => {
    expect('kind' in documents().document(ofTokens(OPERATION_LIMITS.tokens))).toBe(true);
  });

  it(`stops parsing at token ${OPERATION_LIMITS.tokens + 1}: GRAPHQL_PARSE_FAILED`, () => {
    const [error] = errorsOf(documents().document(ofTokens(OPERATION_LIMITS.tokens + 1)));
    expect(error!.extensions.code).toBe('GRAPHQL_PARSE_FAILED');
    expect(error!.message).toMatch(/token/i);
  });
});
