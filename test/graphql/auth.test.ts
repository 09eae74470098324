import { SignJWT, UnsecuredJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { graphql, startTestGateway, TEST_JWT_SECRET, type TestGateway } from '../support/gateway.js';

const API_KEY = 'sk-alice-0123456789abcdef';
const key = new TextEncoder().encode(TEST_JWT_SECRET);

let gateway: TestGateway;

beforeAll(async () => {
  gateway = await startTestGateway();
  await gateway.seed({
    users: [{ id: 1, username: 'alice', quota: 12.5, apiKeys: [API_KEY] }],
    conversations: [{ userId: 1, id: 1, name: 'Trip plan', model: 'gpt-4o', enableWeb: false, messages: [] }],
  });
});

afterAll(() => gateway?.stop());

function sign(claims: { sub?: string; exp?: number; nbf?: number }, secret = key, alg = 'HS256') {
  const jwt = new SignJWT({}).setProtectedHeader({ alg });
  if (claims.sub !== undefined) jwt.setSubject(claims.sub);
  if (claims.exp !== undefined) jwt.setExpirationTime(claims.exp);
  if (claims.nbf !== undefined) jwt.setNotBefore(claims.nbf);
  return jwt.sign(secret);
}

const now = () => Math.floor(Date.now() / 1000);
const QUOTA = '{ quota }';

describe('credentials that are accepted', () => {
  it('accepts `Bearer <token>` and the bare token the legacy web client sends', async () => {
    const token = await gateway.token(1);
    for (const authorization of [`Bearer ${token}`, token, `bearer ${token}`]) {
      const { status, body } = await graphql(gateway, QUOTA, { authorization });
      expect(status).toBe(200);
      expect(body).toEqual({ data: { quota: 12.5 } });
    }
  });

  it('accepts an API key, bare or as a bearer credential', async () => {
    for (const authorization of [API_KEY, `Bearer ${API_KEY}`]) {
      const { body } = await graphql(gateway, QUOTA, { authorization });
      expect(body).toEqual({ data: { quota: 12.5 } });
    }
  });

  it('honours a token whose expiry is in the future', async () => {
    const { body } = await graphql(gateway, QUOTA, { authorization: await sign({ sub: '1', exp: now() + 60 }) });
    expect(body).toEqual({ data: { quota: 12.5 } });
  });
});

describe('credentials that are refused with 401', () => {
  const refused: [string, () => Promise<string | undefined>][] = [
    ['no Authorization header', async () => undefined],
    ['an empty header', async () => ''],
    ['garbage', async () => 'Bearer not-a-token'],
    ['a token signed with another secret', () => sign({ sub: '1' }, new TextEncoder().encode('another-secret-0123456789abcdef'))],
    ['an expired token', () => sign({ sub: '1', exp: now() - 3600 })],
    ['a token not valid yet', () => sign({ sub: '1', nbf: now() + 3600 })],
    ['an unsigned token (alg: none)', async () => new UnsecuredJWT({}).setSubject('1').encode()],
    ['an HS512 token', () => sign({ sub: '1' }, key, 'HS512')],
    ['a token without sub', () => sign({})],
    ['a token whose sub is not a positive decimal integer', () => sign({ sub: '01' })],
    ['a token whose sub is zero', () => sign({ sub: '0' })],
    ['a token whose sub is negative', () => sign({ sub: '-1' })],
    ['a token whose sub is a name', () => sign({ sub: 'alice' })],
    ['an unknown API key', async () => 'sk-unknown-0123456789abcdef'],
    ['an API key with a different case', async () => API_KEY.toUpperCase().replace('SK-', 'sk-')],
  ];

  for (const [name, credential] of refused) {
    it(`refuses ${name}`, async () => {
      const authorization = await credential();
      const commands = await gateway.commandsDuring(async () => {
        const { status, headers, body } = await graphql(
          gateway,
          `
            mutation {
              deleteConversationByNumber(number: 1) {
                ok
              }
            }
          `,
          {
            ...(authorization === undefined ? {} : { authorization }),
          },
        );
        expect(status).toBe(401);
        expect(headers.get('www-authenticate')).toBe('Bearer');
        expect(body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
        expect(body.data).toBeUndefined();
      });
      // Only an API key needs a lookup; nothing else is read, and nothing changes.
      expect(commands.filter((command) => command !== 'find')).toEqual([]);
    });
  }

  it('left the conversation it was asked to delete in place', async () => {
    const { body } = await graphql(
      gateway,
      `
        {
          conversation(number: 1) {
            name
          }
        }
      `,
      { authorization: API_KEY },
    );
    expect(body.data).toEqual({ conversation: { name: 'Trip plan' } });
  });
});
