import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { graphql, startTestGateway, type TestGateway } from '../support/gateway.js';

let gateway: TestGateway;
let alice: string;

beforeAll(async () => {
  gateway = await startTestGateway({ DEPLOYMENT: 'community' });
  await gateway.seed({ users: [{ id: 1, username: 'alice', quota: 12.5 }] });
  alice = await gateway.token(1);
});

afterAll(() => gateway?.stop());

describe('balance and purchases on the community deployment', () => {
  it('reads the caller’s balance in one query', async () => {
    let body: unknown;
    const commands = await gateway.commandsDuring(async () => {
      ({ body } = await graphql(gateway, '{ quota }', { authorization: alice }));
    });
    expect(body).toEqual({ data: { quota: 12.5 } });
    expect(commands).toEqual(['find']);
  });

  it('answers zero for a signed-in user with no balance record yet', async () => {
    const { body } = await graphql(gateway, '{ quota }', { authorization: await gateway.token(42) });
    expect(body).toEqual({ data: { quota: 0 } });
  });

  it('answers buy with UNAVAILABLE and changes nothing', async () => {
    const { body } = await graphql(gateway, 'mutation { buy(quota: 100) { ok quota error { code message } } }', {
      authorization: alice,
    });
    expect(body).toEqual({
      data: { buy: { ok: false, quota: null, error: { code: 'UNAVAILABLE', message: 'not available on this deployment' } } },
    });
    const after = await graphql(gateway, '{ quota }', { authorization: alice });
    expect(after.body).toEqual({ data: { quota: 12.5 } });
  });

  it('checks the quota range before anything else', async () => {
    for (const quota of [0, -1, 100_000]) {
      const { body } = await graphql(gateway, 'mutation($q: Int!) { buy(quota: $q) { ok error { code message } } }', {
        authorization: alice,
        variables: { q: quota },
      });
      expect(body).toEqual({
        data: { buy: { ok: false, error: { code: 'INVALID_INPUT', message: 'invalid quota range (1 ~ 99999)' } } },
      });
    }
  });

  it('fails giftPackage with an UNAVAILABLE error', async () => {
    const { status, body } = await graphql(gateway, '{ giftPackage { cert teenager } }', { authorization: alice });
    expect(status).toBe(200);
    expect(body.data).toBeNull();
    expect(body.errors?.[0]).toMatchObject({
      message: 'not available on this deployment',
      extensions: { code: 'UNAVAILABLE' },
    });
  });
});
