import type { Request } from 'express';
import { GRAPHQL_MAX_INT } from 'graphql';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';

import { PURCHASE_RANGE } from '../../../src/limits.js';
import { conversationIdQuery, purchaseBody, purchaseHeaders, readInput, renameBody } from '../../../src/rest/inputs.js';
import type { RouteInput } from '../../../src/rest/route.js';

/** The parts of an Express request the inputs read: the URL as sent, the body as text, the headers. */
function request(parts: { url?: string; body?: string; headers?: Record<string, string> }): Request {
  return { originalUrl: parts.url ?? '/', body: parts.body, headers: parts.headers ?? {} } as unknown as Request;
}

const byQuery: RouteInput<{ id: number }> = { from: 'query', schema: conversationIdQuery };
const byBody = <T>(schema: z.ZodType<T>): RouteInput<T> => ({ from: 'json-body', schema });

function failureOf(read: ReturnType<typeof readInput>) {
  if (!('failure' in read)) throw new Error(`expected a failure, read ${JSON.stringify(read.variables)}`);
  return { kind: read.failure.kind, message: read.failure.message };
}

describe('the `id` query parameter', () => {
  it.each([
    ['0', 0],
    ['1', 1],
    ['42', 42],
    [String(GRAPHQL_MAX_INT), GRAPHQL_MAX_INT],
  ])('reads ?id=%s as %d', (given, expected) => {
    expect(readInput(byQuery, request({ url: `/conversation/load?id=${given}` }))).toEqual({ variables: { id: expected } });
  });

  it.each([
    ['1e2', 'id=1e2'],
    ['1.5', 'id=1.5'],
    ['0x1', 'id=0x1'],
    ['a leading space', 'id=%201'],
    ['a trailing space', 'id=1%20'],
    ['a sign', 'id=%2B1'],
    ['a negative number', 'id=-1'],
    ['a leading zero', 'id=01'],
    ['nothing', 'id='],
    ['a number past Int', `id=${GRAPHQL_MAX_INT + 1}`],
    ['a huge number', `id=${'9'.repeat(40)}`],
    ['an array by brackets', 'id[]=1'],
    ['an object by brackets', 'id[$gt]=0'],
    ['a name given twice', 'id=1&id=2'],
    ['a name given twice, once with brackets', 'id=1&id[]=2'],
    ['no id at all', 'other=1'],
    ['no query at all', ''],
  ])('refuses %s (%s) as "invalid id", BAD_USER_INPUT', (_, query) => {
    expect(failureOf(readInput(byQuery, request({ url: `/conversation/load?${query}` })))).toEqual({
      kind: 'badUserInput',
      message: 'invalid id',
    });
  });

  it('ignores other parameters', () => {
    expect(readInput(byQuery, request({ url: '/conversation/load?id=3&x=1&y[]=2' }))).toEqual({ variables: { id: 3 } });
  });

  it('reads the query of the URL as sent, percent-decoded', () => {
    expect(readInput(byQuery, request({ url: '/conversation/load?%69d=%37' }))).toEqual({ variables: { id: 7 } });
  });
});

describe('a rename body', () => {
  const rename = byBody(renameBody);

  it('reads the id and the name, as given, and ignores other fields', () => {
    expect(readInput(rename, request({ body: '{"id":3,"name":"  trip  ","other":true}' }))).toEqual({
      variables: { id: 3, name: '  trip  ' },
    });
  });

  it.each([
    ['an empty body', ''],
    ['a blank body', '  \n '],
    ['an array', '[1,2]'],
    ['a string', '"name"'],
    ['a number', '3'],
    ['null', 'null'],
  ])('refuses %s: "request body must be a JSON object"', (_, body) => {
    const read = failureOf(readInput(rename, request({ body })));
    expect(read.message).toBe('request body must be a JSON object');
  });

  it('refuses a body that is not JSON as a bad request', () => {
    expect(failureOf(readInput(rename, request({ body: '{"id":1,' })))).toEqual({
      kind: 'badRequest',
      message: 'request body is not valid JSON',
    });
  });

  it('refuses an empty body as a bad request, not as bad input', () => {
    expect(failureOf(readInput(rename, request({ body: '' }))).kind).toBe('badRequest');
    expect(failureOf(readInput(rename, request({ body: '[]' }))).kind).toBe('badUserInput');
  });

  it.each([
    ['a string id', '{"id":"1","name":"x"}'],
    ['a fractional id', '{"id":1.5,"name":"x"}'],
    ['a negative id', '{"id":-1,"name":"x"}'],
    ['an id past Int', `{"id":${GRAPHQL_MAX_INT + 1},"name":"x"}`],
    ['an id as an array', '{"id":[1],"name":"x"}'],
    ['an id as an object', '{"id":{"$gt":0},"name":"x"}'],
    ['no id', '{"name":"x"}'],
  ])('refuses %s: "invalid id"', (_, body) => {
    expect(failureOf(readInput(rename, request({ body })))).toEqual({ kind: 'badUserInput', message: 'invalid id' });
  });

  it.each([
    ['a number as the name', '{"id":1,"name":5}'],
    ['an array as the name', '{"id":1,"name":["x"]}'],
    ['an object as the name', '{"id":1,"name":{"$set":"x"}}'],
    ['no name', '{"id":1}'],
  ])('refuses %s: "invalid name"', (_, body) => {
    expect(failureOf(readInput(rename, request({ body })))).toEqual({ kind: 'badUserInput', message: 'invalid name' });
  });

  it('leaves the name’s own rules (length, blank) to the service: a blank name is read as given', () => {
    expect(readInput(rename, request({ body: '{"id":1,"name":"   "}' }))).toEqual({ variables: { id: 1, name: '   ' } });
  });
});

describe('a purchase', () => {
  const purchase: RouteInput<{ quota: number; idempotencyKey?: string }> = {
    from: 'json-body',
    schema: purchaseBody,
    headers: purchaseHeaders,
  };
  const invalidQuota = `invalid quota range (${PURCHASE_RANGE.min} ~ ${PURCHASE_RANGE.max})`;

  it.each([PURCHASE_RANGE.min, 500, PURCHASE_RANGE.max])('buys %d points', (quota) => {
    expect(readInput(purchase, request({ body: JSON.stringify({ quota }) }))).toEqual({ variables: { quota } });
  });

  it.each([
    ['zero', '{"quota":0}'],
    ['one past the range', `{"quota":${PURCHASE_RANGE.max + 1}}`],
    ['a fraction', '{"quota":1.5}'],
    ['a string', '{"quota":"10"}'],
    ['an array', '{"quota":[10]}'],
    ['nothing', '{}'],
  ])('refuses a quota of %s', (_, body) => {
    expect(failureOf(readInput(purchase, request({ body })))).toEqual({ kind: 'badUserInput', message: invalidQuota });
  });

  it('reads the Idempotency-Key header beside the body', () => {
    expect(readInput(purchase, request({ body: '{"quota":5}', headers: { 'idempotency-key': 'key-1' } }))).toEqual({
      variables: { quota: 5, idempotencyKey: 'key-1' },
    });
  });

  it.each([
    ['a key sent twice (joined with ", ")', 'a, b'],
    ['a key with a space', 'a b'],
    ['a key past 255 characters', 'k'.repeat(256)],
    ['a key outside visible ASCII', 'clé'],
  ])('refuses %s', (_, key) => {
    expect(failureOf(readInput(purchase, request({ body: '{"quota":5}', headers: { 'idempotency-key': key } })))).toEqual({
      kind: 'badUserInput',
      message: 'invalid idempotency key (1 ~ 255 visible ASCII characters)',
    });
  });

  it('judges the body before the headers', () => {
    expect(failureOf(readInput(purchase, request({ body: '{"quota":0}', headers: { 'idempotency-key': 'a b' } }))).message).toBe(
      invalidQuota,
    );
  });
});
