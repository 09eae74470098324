import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { createClient as createSseClient } from 'graphql-sse';
import { createClient as createWsClient } from 'graphql-ws';
import {
  type CryptoKey,
  exportJWK,
  exportSPKI,
  generateKeyPair,
  type GenerateKeyPairResult,
  type JWK,
  type JWTPayload,
  SignJWT,
  UnsecuredJWT,
} from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';

import { Authenticator } from '../../src/auth/authenticator.js';
import { ProviderTokens } from '../../src/auth/provider-tokens.js';
import { type CapturedLog, captureLog } from '../support/captured-log.js';
import { graphql, startTestGateway, type TestGateway } from '../support/gateway.js';
import { startTestSidecar, type TestSidecar } from '../support/sidecar.js';

const ISSUER = 'https://id.example.test/realms/chat';
const AUDIENCE = 'chat-gateway';
const ALICE = 1;
const SEED = { users: [{ id: ALICE, username: 'alice', quota: 12.5 }] };

/** A key of the provider: its pair, and the public JWK the key set publishes. */
interface ProviderKey {
  kid: string;
  alg: 'RS256' | 'ES256' | 'EdDSA' | 'PS256';
  pair: GenerateKeyPairResult;
  jwk: JWK;
}

async function providerKey(kid: string, alg: ProviderKey['alg']): Promise<ProviderKey> {
  const pair = await generateKeyPair(alg, { extractable: true });
  return { kid, alg, pair, jwk: { ...(await exportJWK(pair.publicKey)), kid, alg, use: 'sig' } };
}

/** A JSON Web Key Set served on 127.0.0.1, as a provider's `jwks_uri` serves it; it counts the fetches. */
class KeySetServer {
  keys: JWK[] = [];
  fetches = 0;
  private server: Server | undefined;
  port = 0;

  async start(): Promise<void> {
    this.server = createServer((_request, response) => {
      this.fetches += 1;
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: this.keys }));
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/protocol/openid-connect/certs`;
  }

  /** The provider goes down: nothing listens on its port any more. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server === undefined) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** A token as the provider issues it, signed with `key`; `claims` override the usual ones, `undefined` drops one. */
function sign(key: ProviderKey, claims: Record<string, unknown> = {}, signingKey: CryptoKey = key.pair.privateKey): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const payload: JWTPayload = { sub: String(ALICE), iss: ISSUER, aud: AUDIENCE, iat: now, exp: now + 600, ...claims };
  for (const [name, value] of Object.entries(payload)) if (value === undefined) delete payload[name];
  return new SignJWT(payload).setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT' }).sign(signingKey);
}

async function quota(authorization: string): Promise<{ status: number; code?: string; quota?: number; message?: string }> {
  const answer = await graphql<{ quota: number }>(gateway, '{ quota }', { authorization });
  const error = answer.body.errors?.[0];
  return { status: answer.status, code: error?.extensions?.code, quota: answer.body.data?.quota, message: error?.message };
}

const keySet = new KeySetServer();
let rsa: ProviderKey, ec: ProviderKey, ed: ProviderKey;
let gateway: TestGateway;
let sidecar: TestSidecar;
let log: CapturedLog;

beforeAll(async () => {
  [rsa, ec, ed] = await Promise.all([providerKey('rsa-1', 'RS256'), providerKey('ec-1', 'ES256'), providerKey('ed-1', 'EdDSA')]);
  keySet.keys = [rsa.jwk, ec.jwk, ed.jwk];
  await keySet.start();
  log = captureLog();
  gateway = await startTestGateway(
    { JWT_JWKS_URL: keySet.url, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE },
    // No cooldown: each unknown `kid` refetches at once, so rotation and outage are seen without waiting.
    { logger: log.logger, providerKeyTimings: { cooldownMs: 0, timeoutMs: 2_000 } },
  );
  await gateway.seed(SEED);
  sidecar = await startTestSidecar(`${gateway.url}/graphql`);
});
afterAll(async () => {
  await sidecar?.stop();
  await gateway?.stop();
  await keySet.stop();
});

describe('access tokens of an OpenID Connect provider (JWT_JWKS_URL)', () => {
  it.each(['RS256', 'ES256', 'EdDSA'])('are accepted when signed with a key of its set (%s)', async (alg) => {
    const key = [rsa, ec, ed].find((candidate) => candidate.alg === alg)!;
    expect(await quota(`Bearer ${await sign(key)}`)).toMatchObject({ status: 200, quota: 12.5 });
  });

  it('read the user from the claim, as a decimal string or a number, and the gateway’s own HS256 tokens still work beside them', async () => {
    expect(await quota(`Bearer ${await sign(rsa, { sub: ALICE })}`)).toMatchObject({ status: 200, quota: 12.5 });
    expect(await quota(`Bearer ${await gateway.token(ALICE)}`)).toMatchObject({ status: 200, quota: 12.5 });
  });

  it('stand alone for a real database without JWT_SECRET: then no HS256 token is accepted', async () => {
    const providerOnly = await startTestGateway({ JWT_SECRET: '', JWT_JWKS_URL: keySet.url }, { database: gateway.testDatabase });
    try {
      const ask = async (token: string) => (await graphql(providerOnly, '{ quota }', { authorization: `Bearer ${token}` })).status;
      expect(await ask(await sign(rsa))).toBe(200);
      expect(await ask(await gateway.token(ALICE))).toBe(401);
    } finally {
      await providerOnly.stop();
    }
  });

  it('are refused with 401 when signed with `none`, with HS256 and the public key as its secret, or with a key outside the set', async () => {
    const now = Math.floor(Date.now() / 1000);
    const unsecured = new UnsecuredJWT({ sub: String(ALICE), iss: ISSUER, aud: AUDIENCE, exp: now + 600 }).encode();
    const publicKeyAsSecret = new TextEncoder().encode(await exportSPKI(rsa.pair.publicKey));
    const hmac = await new SignJWT({ sub: String(ALICE), iss: ISSUER, aud: AUDIENCE, exp: now + 600 })
      .setProtectedHeader({ alg: 'HS256', kid: rsa.kid })
      .sign(publicKeyAsSecret);
    const stranger = await providerKey('stranger', 'RS256');
    const impostor = await providerKey(rsa.kid, 'RS256');
    const fetchesBefore = keySet.fetches;
    for (const token of [unsecured, hmac, await sign(stranger), await sign(impostor)]) {
      expect(await quota(`Bearer ${token}`), token).toMatchObject({ status: 401, code: 'UNAUTHENTICATED' });
    }
    // The stranger's unknown `kid` made the gateway look again, and still find no such key.
    expect(keySet.fetches).toBeGreaterThan(fetchesBefore);
  });

  it('are refused without `exp`, once expired, with another issuer or audience, or without a user id', async () => {
    const now = Math.floor(Date.now() / 1000);
    for (const claims of [
      { exp: undefined },
      { exp: now - 120 },
      { iss: 'https://elsewhere.example.test/' },
      { aud: 'another-api' },
      { sub: 'alice' },
      { sub: undefined },
    ]) {
      expect(await quota(`Bearer ${await sign(ec, claims)}`), JSON.stringify(claims)).toMatchObject({
        status: 401,
        code: 'UNAUTHENTICATED',
      });
    }
    expect(await quota(`Bearer ${await sign(ec, { aud: ['another-api', AUDIENCE] })}`)).toMatchObject({ status: 200 });
  });

  it('are accepted on every door: REST, WebSocket (graphql-ws), Server-Sent Events (graphql-sse) and multipart', async () => {
    const authorization = `Bearer ${await sign(ed)}`;
    const rest = await fetch(`${gateway.url}/quota`, { headers: { authorization } });
    expect([rest.status, await rest.text()]).toEqual([200, '{"status":true,"quota":12.5}']);

    const ws = createWsClient({
      url: `${gateway.url.replace(/^http/, 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { Authorization: authorization },
      retryAttempts: 0,
    });
    const sse = createSseClient({ url: `${gateway.url}/graphql/stream`, headers: { authorization }, retryAttempts: 0 });
    try {
      for (const client of [ws, sse]) {
        const first = await new Promise<unknown>((resolve, reject) => {
          const stop = client.subscribe(
            { query: 'subscription { quota }' },
            { next: (value) => (stop(), resolve(value)), error: reject, complete: () => {} },
          );
        });
        expect(first).toEqual({ data: { quota: 12.5 } });
      }
    } finally {
      await ws.dispose();
      sse.dispose();
    }

    const controller = new AbortController();
    const multipart = await fetch(`${gateway.url}/graphql`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json', accept: 'multipart/mixed;subscriptionSpec="1.0"' },
      body: JSON.stringify({ query: 'subscription { quota }' }),
      signal: controller.signal,
    });
    expect(multipart.status).toBe(200);
    const reader = multipart.body!.getReader();
    let text = '';
    while (!text.includes('"quota"')) text += new TextDecoder().decode((await reader.read()).value);
    expect(text).toContain('{"payload":{"data":{"quota":12.5}}}');
    controller.abort();
  });

  it('work with a rotated key without a restart: a new `kid` refetches the set', async () => {
    const next = await providerKey('rsa-2', 'PS256');
    keySet.keys = [next.jwk, ec.jwk, ed.jwk];
    const fetchesBefore = keySet.fetches;
    expect(await quota(`Bearer ${await sign(next)}`)).toMatchObject({ status: 200, quota: 12.5 });
    expect(keySet.fetches).toBe(fetchesBefore + 1);
  });

  it('keep working while the provider is down for keys held; a key that cannot be fetched answers 503 on every door, logged', async () => {
    await keySet.stop();
    try {
      // A token not seen before, of a key held: verified with the held key.
      expect(await quota(`Bearer ${await sign(ec, { jti: 'during-the-outage' })}`)).toMatchObject({ status: 200, quota: 12.5 });
      const unknown = `Bearer ${await sign(await providerKey('rsa-3', 'RS256'))}`;
      const answer = await quota(unknown);
      expect(answer).toMatchObject({ status: 503, code: 'AUTHENTICATION_UNAVAILABLE' });
      expect(answer.message).toMatch(/signing keys cannot be fetched right now/);
      const rest = await fetch(`${gateway.url}/quota`, { headers: { authorization: unknown } });
      expect(rest.status).toBe(503);
      expect(rest.headers.get('retry-after')).not.toBeNull();
      expect(await rest.json()).toEqual({ status: false, error: expect.stringMatching(/cannot be fetched right now/) });
      // The REST sidecar in front of the gateway answers it alike.
      const throughSidecar = await fetch(`${sidecar.url}/conversation/list`, { headers: { authorization: unknown } });
      expect(throughSidecar.status).toBe(503);
      expect(await throughSidecar.json()).toEqual({ status: false, message: expect.stringMatching(/cannot be fetched right now/) });
      const closed = await new Promise<{ code: number; reason: string }>((resolve) => {
        const socket = new WebSocket(`${gateway.url.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
        socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: unknown } })));
        socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
      });
      expect(closed.code).toBe(1013);
      expect(log.lines().some((line) => String(line.msg).includes('JWT_JWKS_URL') && line.jwksUrl === keySet.url)).toBe(true);
    } finally {
      await keySet.start();
    }
  });
});

describe('the key set’s refetches', () => {
  it('happen at most once per cooldown, however many unknown `kid`s come', async () => {
    const provider = new ProviderTokens(
      { jwksUrl: keySet.url, issuer: ISSUER, audience: AUDIENCE, userClaim: 'sub' },
      captureLog().logger,
      { cooldownMs: 60_000, timeoutMs: 2_000 },
    );
    const authenticator = new Authenticator({ provider }, gateway.domains.accounts.store);
    const fetchesBefore = keySet.fetches;
    expect(await authenticator.authenticate(`Bearer ${await sign(ec)}`)).toMatchObject({ userId: ALICE });
    for (const kid of ['unknown-1', 'unknown-2', 'unknown-3']) {
      expect(await authenticator.authenticate(`Bearer ${await sign(await providerKey(kid, 'ES256'))}`)).toBeNull();
    }
    expect(keySet.fetches).toBe(fetchesBefore + 1);
  });

  it('tell each caller when their access token stops being accepted, as for the gateway’s own tokens', async () => {
    const provider = new ProviderTokens(
      { jwksUrl: keySet.url, issuer: undefined, audience: undefined, userClaim: 'uid' },
      captureLog().logger,
    );
    const authenticator = new Authenticator({ provider }, gateway.domains.accounts.store);
    const exp = Math.floor(Date.now() / 1000) + 300;
    expect(await authenticator.authenticate(await sign(ed, { uid: '42', exp }))).toEqual({ userId: 42, acceptedUntil: (exp + 30) * 1000 });
  });
});
