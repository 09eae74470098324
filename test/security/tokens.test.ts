import { createHash, createHmac } from 'node:crypto';

import { base64url, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startTestGateway, TEST_JWT_SECRET, type TestGateway } from '../support/gateway.js';
import { json, postGraphql, send } from './http.js';

const ALICE = 1;
const API_KEY = 'sk-alice-0123456789abcdef';
const key = new TextEncoder().encode(TEST_JWT_SECRET);
const now = () => Math.floor(Date.now() / 1000);

let gateway: TestGateway;

beforeAll(async () => {
  gateway = await startTestGateway();
  await gateway.seed({
    users: [{ id: ALICE, username: 'alice', quota: 12.5, apiKeys: [API_KEY] }],
    conversations: [{ userId: ALICE, id: 1, name: 'Trip plan', model: 'gpt-4o', messages: [] }],
  });
});

afterAll(() => gateway?.stop());

/** A token with exactly these claims and header, signed with the test secret unless told otherwise. */
function sign(claims: Record<string, unknown>, header: Record<string, unknown> = {}, secret: Uint8Array = key) {
  return new SignJWT(claims).setProtectedHeader({ alg: 'HS256', ...header } as { alg: string }).sign(secret);
}

/** An HS256 token built by hand, for headers jose refuses to sign. */
function signByHand(header: object, claims: object): string {
  const input = `${base64url.encode(JSON.stringify(header))}.${base64url.encode(JSON.stringify(claims))}`;
  return `${input}.${createHmac('sha256', key).update(input).digest('base64url')}`;
}

/** Replaces a signed token's header, keeping its payload and signature. */
function withHeader(token: string, header: object): string {
  const [, payload, signature] = token.split('.');
  return [base64url.encode(JSON.stringify(header)), payload, signature].join('.');
}

async function quota(authorization: string) {
  return postGraphql(gateway.url, { query: '{ quota }' }, { authorization });
}

describe('clock skew of 30 seconds on exp and nbf', () => {
  const cases: [string, Record<string, unknown>, number][] = [
    ['a token that expired 10 seconds ago', { sub: '1', exp: now() - 10 }, 200],
    ['a token that expired 2 minutes ago', { sub: '1', exp: now() - 120 }, 401],
    ['a token valid from 10 seconds from now', { sub: '1', nbf: now() + 10 }, 200],
    ['a token valid from 2 minutes from now', { sub: '1', nbf: now() + 120 }, 401],
  ];
  for (const [name, claims, status] of cases) {
    it(`answers ${status} to ${name}`, async () => {
      expect((await quota(await sign(claims))).status).toBe(status);
    });
  }
});

describe('credentials refused with 401, reading nothing', () => {
  it('accepts the well-formed tokens the cases below are made from', async () => {
    expect((await quota(await sign({ sub: '1' }))).status).toBe(200);
    expect((await quota(signByHand({ alg: 'HS256' }, { sub: '1' }))).status).toBe(200);
  });

  const refused: [string, () => Promise<string>][] = [
    ['a sub given as a number', () => sign({ sub: 1 })],
    ['a sub with a decimal point', () => sign({ sub: '1.0' })],
    ['a sub in exponent notation', () => sign({ sub: '1e0' })],
    ['a sub with a plus sign', () => sign({ sub: '+1' })],
    ['a sub in hexadecimal', () => sign({ sub: '0x1' })],
    ['a sub with spaces', () => sign({ sub: ' 1' })],
    ['a sub with a trailing newline', () => sign({ sub: '1\n' })],
    ['a sub of full-width digits', () => sign({ sub: '１' })],
    ['a sub beyond the safe integers', () => sign({ sub: '9007199254740993' })],
    ['a sub of twenty digits', () => sign({ sub: '12345678901234567890' })],
    ['an exp that is not a number', () => sign({ sub: '1', exp: String(now() + 3600) })],
    ['an nbf that is not a number', () => sign({ sub: '1', nbf: 'now' })],
    ['an HS384 token signed with the right secret', () => sign({ sub: '1' }, { alg: 'HS384' })],
    ['an HS256 token whose header was relabelled HS512', async () => withHeader(await sign({ sub: '1' }), { alg: 'HS512' })],
    ['a token whose header says alg "hs256"', async () => withHeader(await sign({ sub: '1' }), { alg: 'hs256' })],
    ['a token whose header says alg "none", signature kept', async () => withHeader(await sign({ sub: '1' }), { alg: 'none' })],
    ['a token with its signature removed', async () => (await sign({ sub: '1' })).replace(/[^.]+$/, '')],
    [
      'an RS256 token',
      async () => {
        const { privateKey } = await generateKeyPair('RS256');
        return new SignJWT({ sub: '1' }).setProtectedHeader({ alg: 'RS256' }).sign(privateKey);
      },
    ],
    [
      'a token for user 2 carrying the signature of a token for user 1',
      async () => {
        const forOne = await sign({ sub: '1' });
        const forTwo = await sign({ sub: '2' });
        return `${forTwo.split('.').slice(0, 2).join('.')}.${forOne.split('.')[2]}`;
      },
    ],
    [
      'a token with an unknown critical header',
      async () => signByHand({ alg: 'HS256', crit: ['x-unknown'], 'x-unknown': true }, { sub: '1' }),
    ],
    ['a token signed with the secret’s first 16 characters', () => sign({ sub: '1' }, {}, key.slice(0, 16))],
    ['two tokens in one header', async () => `Bearer ${await sign({ sub: '1' })} ${await sign({ sub: '1' })}`],
    ['a 5 000-character credential', async () => `Bearer ${'a'.repeat(5_000)}`],
    ['a credential with non-ASCII characters', async () => `Bearer ${(await sign({ sub: '1' })).replace(/.$/, 'é')}`],
    ['another scheme', async () => `Basic ${Buffer.from('alice:secret').toString('base64')}`],
  ];

  for (const [name, credential] of refused) {
    it(`refuses ${name}`, async () => {
      const authorization = await credential();
      const commands = await gateway.commandsDuring(async () => {
        const answer = await send(gateway.url, {
          method: 'POST',
          path: '/graphql',
          headers: { authorization, 'content-type': 'application/json' },
          body: JSON.stringify({ query: 'mutation { deleteConversationByNumber(number: 1) { ok } }' }),
        });
        expect(answer.status).toBe(401);
        expect(answer.headers['www-authenticate']).toBe('Bearer');
        expect(json(answer).errors[0].extensions.code).toBe('UNAUTHENTICATED');
      });
      expect(commands).toEqual([]);
    });
  }
});

describe('API keys', () => {
  const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
  const refused: [string, string][] = [
    ['the key without its last character', API_KEY.slice(0, -1)],
    ['the key with one more character', `${API_KEY}0`],
    ['the key with its last character changed', `${API_KEY.slice(0, -1)}e`],
    ['the stored hash of the key', sha256(API_KEY)],
    ['the stored hash of the key behind the sk- prefix', `sk-${sha256(API_KEY)}`],
    ['the prefix alone', 'sk-'],
  ];

  for (const [name, credential] of refused) {
    it(`refuses ${name}, with at most one lookup by hash`, async () => {
      const commands = await gateway.commandsDuring(async () => {
        for (const path of ['/conversation/delete?id=1', '/quota']) {
          const answer = await send(gateway.url, { path, headers: { authorization: credential } });
          expect(answer.status).toBe(401);
        }
      });
      expect(commands.every((command) => command === 'find')).toBe(true);
    });
  }

  it('accepts the key itself, and the conversation the refused deletes named is still there', async () => {
    const answer = await send(gateway.url, { path: '/conversation/load?id=1', headers: { authorization: API_KEY } });
    expect(json(answer)).toMatchObject({ status: true, data: { id: 1, name: 'Trip plan' } });
  });
});
