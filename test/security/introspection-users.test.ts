import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { json, postGraphql, type RawAnswer } from './http.js';

const OPERATOR = 7;
const USER = 8;
const API_KEY = 'sk-operator-0123456789abcdef';
const SEED = {
  users: [
    { id: OPERATOR, username: 'operator', quota: 1, apiKeys: [API_KEY] },
    { id: USER, username: 'user', quota: 1 },
  ],
};

let production: TestGateway;
let operator: string;
let user: string;

beforeAll(async () => {
  production = await startTestGateway({ NODE_ENV: 'production', INTROSPECTION_USERS: String(OPERATOR) });
  await production.seed(SEED);
  operator = `Bearer ${await production.token(OPERATOR)}`;
  user = `Bearer ${await production.token(USER)}`;
});
afterAll(() => production?.stop());

const introspect = (text: string, authorization: string) => postGraphql(production.url, { query: text }, { authorization });

function expectRefused(answer: RawAnswer): void {
  expect(answer.status).toBe(400);
  expect(json(answer)).toEqual({
    errors: [
      { message: 'the operation is not valid (the reason is shown outside production)', extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } },
    ],
  });
}

describe('INTROSPECTION_USERS in production', () => {
  it('lets the listed callers introspect, with a token or an API key; everyone else keeps the refusal', async () => {
    const text = 'query Schema { __schema { queryType { name } } }';
    expect(json(await introspect(text, operator))).toEqual({ data: { __schema: { queryType: { name: 'Query' } } } });
    expect(json(await introspect(text, `Bearer ${API_KEY}`))).toEqual({ data: { __schema: { queryType: { name: 'Query' } } } });
    expectRefused(await introspect(text, user));
  });

  it('never reuses a validation made for a listed caller for another: the same text, cached, is refused to them', async () => {
    const text = '{ __type(name: "Conversation") { fields { name } } }';
    // The listed caller first: the document is parsed, validated and cached.
    expect((await introspect(text, operator)).status).toBe(200);
    expectRefused(await introspect(text, user));
    expectRefused(await introspect(text, user));
    // The other way round too: a refusal is no reason to refuse the listed caller.
    const other = '{ __schema { types { name } } }';
    expectRefused(await introspect(other, user));
    expect((await introspect(other, operator)).status).toBe(200);
  });

  it('holds in a batch, operation by operation', async () => {
    const answer = await postGraphql(production.url, [{ query: '{ quota }' }, { query: '{ __schema { queryType { name } } }' }], {
      authorization: user,
    });
    const [quota, schema] = json(answer) as { data?: unknown; errors?: { extensions: { code: string } }[] }[];
    expect(quota).toEqual({ data: { quota: 1 } });
    expect(schema!.errors![0]!.extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
  });

  it('leaves `__typename` to everyone, as graphql-js’s rule does', async () => {
    expect(json(await introspect('{ __typename quota }', user))).toEqual({ data: { __typename: 'Query', quota: 1 } });
  });
});
