import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { SsoStub } from '../../src/sso-stub/stub-server.js';
import { graphql, startTestGateway, type TestGateway } from '../support/gateway.js';
import { buy, quotaOf, rest, SSO_SECRET, startStub } from './official.js';

let stub: SsoStub;
let gateway: TestGateway;
let alice: string;

beforeAll(async () => {
  stub = await startStub({ alice: { wallet: 100, cert: true, teenager: true } });
  // SSO settings are ignored unless DEPLOYMENT=official.
  gateway = await startTestGateway({ DEPLOYMENT: 'community', SSO_URL: stub.url, SSO_SECRET, SETTLEMENT_INTERVAL_MS: '20' });
  await gateway.seed({ users: [{ id: 1, username: 'alice', quota: 12.5 }] });
  alice = await gateway.token(1);
});

afterAll(async () => {
  await gateway?.stop();
  await stub?.close();
});

describe('the community deployment and the SSO provider', () => {
  it('answers buy and package as not available and never calls the provider', async () => {
    expect(await buy(gateway, alice, 100)).toEqual({
      status: 200,
      text: '{"status":false,"error":"not available on this deployment"}',
    });
    expect(await rest(gateway, alice, '/package')).toEqual({
      status: 200,
      text: '{"status":false,"error":"not available on this deployment"}',
    });
    const bought = await graphql(gateway, 'mutation { buy(quota: 10) { ok error { code message } } }', { authorization: alice });
    expect(bought.body).toEqual({
      data: { buy: { ok: false, error: { code: 'UNAVAILABLE', message: 'not available on this deployment' } } },
    });
    const gifts = await graphql(gateway, '{ giftPackage { cert } }', { authorization: alice });
    expect(gifts.body).toMatchObject({
      data: null,
      errors: [{ message: 'not available on this deployment', extensions: { code: 'UNAVAILABLE' } }],
    });
    expect(await quotaOf(gateway, alice)).toBe(12.5);

    // Nothing is left to call the provider later: no payment client, no settlement sweep.
    expect(gateway.domains.billing.official).toBeUndefined();
    expect(stub.calls).toEqual([]);
    expect(stub.wallet('alice')).toBe(100);
    expect(await gateway.models.purchases.countDocuments()).toBe(0);
  });
});
