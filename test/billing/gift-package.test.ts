import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import type { SsoStub } from '../../src/sso-stub/stub-server.js';
import { graphql, type TestGateway } from '../support/gateway.js';
import { callsTo, quotaOf, rest, startOfficialGateway, startStub, userRecord } from './official.js';

let stub: SsoStub;
let gateway: TestGateway;
const tokens = new Map<number, string>();
const token = (userId: number): string => tokens.get(userId)!;

beforeAll(async () => {
  stub = await startStub({
    alice: { cert: true, teenager: false },
    bob: { cert: false, teenager: false },
    carol: { cert: true, teenager: true },
    dave: { cert: false, teenager: false },
    erin: { cert: true, teenager: true },
    frank: { cert: true, teenager: true },
    gina: { cert: false, teenager: false },
  });
  gateway = await startOfficialGateway(stub);
  await gateway.seed({
    users: [
      { id: 1, username: 'alice', quota: 1.5 },
      { id: 2, username: 'bob', quota: 0 },
      { id: 3, username: 'carol', quota: 0.0001 },
      { id: 4, username: 'dave', quota: 10 },
      { id: 5, username: 'erin', quota: 0 },
      { id: 6, username: 'frank', quota: 2 },
      { id: 7, username: 'gina', quota: 1 },
    ],
  });
  for (const id of [1, 2, 3, 4, 5, 6, 7, 99]) tokens.set(id, await gateway.token(id));
});

afterEach(() => stub.setFaults({}));

afterAll(async () => {
  await gateway?.stop();
  await stub?.close();
});

const grantsOf = (userId: number) =>
  gateway.models.giftGrants.find({ userId }, { _id: 0, gift: 1, points: 1, credited: 1 }).sort({ gift: 1 }).lean();

describe('the gift package on the official deployment', () => {
  it('answers the provider’s flags byte for byte and grants 50 points once for certification', async () => {
    expect(await rest(gateway, token(1), '/package')).toEqual({
      status: 200,
      text: '{"status":true,"data":{"cert":true,"teenager":false}}',
    });
    expect(await quotaOf(gateway, token(1))).toBe(51.5);

    expect(await rest(gateway, token(1), '/package')).toEqual({
      status: 200,
      text: '{"status":true,"data":{"cert":true,"teenager":false}}',
    });
    expect(await quotaOf(gateway, token(1))).toBe(51.5);
    expect(await grantsOf(1)).toEqual([{ gift: 'cert', points: 50, credited: true }]);
  });

  it('grants nothing to an uncertified adult', async () => {
    const { body } = await graphql(gateway, '{ giftPackage { cert teenager } }', { authorization: token(2) });

    expect(body).toEqual({ data: { giftPackage: { cert: false, teenager: false } } });
    expect(await quotaOf(gateway, token(2))).toBe(0);
    expect(await grantsOf(2)).toEqual([]);
  });

  it('grants 50 and 150 points exactly once each when 25 requests race', async () => {
    const answers = await Promise.all(
      Array.from({ length: 25 }, (_, index) =>
        index % 2 === 0
          ? rest(gateway, token(3), '/package').then((answer) => answer.text)
          : graphql(gateway, '{ giftPackage { cert teenager } }', { authorization: token(3) }).then(({ body }) => JSON.stringify(body)),
      ),
    );

    for (const [index, text] of answers.entries()) {
      expect(text).toBe(
        index % 2 === 0 ? '{"status":true,"data":{"cert":true,"teenager":true}}' : '{"data":{"giftPackage":{"cert":true,"teenager":true}}}',
      );
    }
    expect(await quotaOf(gateway, token(3))).toBe(200.0001);
    expect(await grantsOf(3)).toEqual([
      { gift: 'cert', points: 50, credited: true },
      { gift: 'teenager', points: 150, credited: true },
    ]);
    expect((await userRecord(gateway, 3))?.grantedGifts?.toSorted()).toEqual(['cert', 'teenager']);
  });

  it('grants a gift the user qualifies for later, and never one a second time after the flag goes away and back', async () => {
    await rest(gateway, token(4), '/package');
    expect(await quotaOf(gateway, token(4))).toBe(10);

    stub.setUser('dave', { cert: true });
    await rest(gateway, token(4), '/package');
    stub.setUser('dave', { cert: false, teenager: true });
    await rest(gateway, token(4), '/package');
    stub.setUser('dave', { cert: true, teenager: true });
    expect(await rest(gateway, token(4), '/package')).toEqual({
      status: 200,
      text: '{"status":true,"data":{"cert":true,"teenager":true}}',
    });

    expect(await quotaOf(gateway, token(4))).toBe(210);
  });

  it('fails clearly and grants nothing while the provider is down', async () => {
    stub.setFaults({ down: true });

    expect(await rest(gateway, token(5), '/package')).toEqual({
      status: 200,
      text: '{"status":false,"error":"payment provider unavailable, try again later"}',
    });
    const { status, body } = await graphql(gateway, '{ giftPackage { cert teenager } }', { authorization: token(5) });
    expect(status).toBe(200);
    expect(body.data).toBeNull();
    expect(body.errors?.[0]).toMatchObject({
      message: 'payment provider unavailable, try again later',
      extensions: { code: 'UNAVAILABLE' },
    });
    expect(await quotaOf(gateway, token(5))).toBe(0);
    expect(await grantsOf(5)).toEqual([]);

    stub.setFaults({ garbage: true });
    expect(JSON.parse((await rest(gateway, token(5), '/package')).text)).toEqual({
      status: false,
      error: 'payment provider unavailable, try again later',
    });
    expect(await quotaOf(gateway, token(5))).toBe(0);
  });

  it('completes a grant whose credit was cut off by a crash, once', async () => {
    // What a crash right after the grant record was written leaves behind.
    await gateway.models.giftGrants.create({ userId: 6, gift: 'cert', points: 50, credited: false });

    await Promise.all(Array.from({ length: 5 }, () => rest(gateway, token(6), '/package')));

    expect(await quotaOf(gateway, token(6))).toBe(202);
    expect(await grantsOf(6)).toEqual([
      { gift: 'cert', points: 50, credited: true },
      { gift: 'teenager', points: 150, credited: true },
    ]);
  });

  it('completes a claim cut off by a crash even after the flag went away, and records a credit cut off before its record, once', async () => {
    // Crashes: one right after the claim of `cert`, one between the credit of `teenager` and its record.
    await gateway.models.giftGrants.create({ userId: 7, gift: 'cert', points: 50, credited: false });
    await gateway.models.giftGrants.create({ userId: 7, gift: 'teenager', points: 150, credited: false });
    await gateway.models.users.updateOne({ id: 7 }, { $inc: { balanceMicros: 150_000_000 }, $addToSet: { grantedGifts: 'teenager' } });

    await Promise.all(Array.from({ length: 3 }, () => rest(gateway, token(7), '/package')));

    expect(await quotaOf(gateway, token(7))).toBe(201);
    expect(await grantsOf(7)).toEqual([
      { gift: 'cert', points: 50, credited: true },
      { gift: 'teenager', points: 150, credited: true },
    ]);
  });

  it('fails clearly for a caller without a user record, without calling the provider', async () => {
    const before = callsTo(stub, '/app/cert');

    expect(await rest(gateway, token(99), '/package')).toEqual({
      status: 200,
      text: '{"status":false,"error":"no account for this user"}',
    });
    expect(callsTo(stub, '/app/cert')).toBe(before);
  });
});
