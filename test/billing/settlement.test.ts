import mongoose from 'mongoose';
import { afterEach, describe, expect, it } from 'vitest';
import { signAccessToken, secretKey } from '../../src/auth/access-token.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { loadSeed } from '../../src/seed/seed-file.js';
import { startService } from '../../src/service.js';
import type { SsoStub } from '../../src/sso-stub/stub-server.js';
import { startTestDatabase, type TestDatabase } from '../support/database.js';
import { TEST_JWT_SECRET, type TestGateway } from '../support/gateway.js';
import {
  buy,
  callsTo,
  eventually,
  officialEnvironment,
  PROVIDER_UNAVAILABLE,
  purchasesOf,
  QUICK_SSO,
  quotaOf,
  startOfficialGateway,
  startStub,
  SUCCESS,
  userRecord,
} from './official.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('the settlement sweep', () => {
  it('credits a payment whose answers were lost without any request from its user, exactly once', async () => {
    const stub: SsoStub = await startStub({ olga: { wallet: 10 } });
    cleanups.push(() => stub.close());
    const gateway: TestGateway = await startOfficialGateway(stub, { SETTLEMENT_INTERVAL_MS: '100' });
    cleanups.push(() => gateway.stop());
    await gateway.seed({ users: [{ id: 1, username: 'olga', quota: 0.5 }] });
    const token = await gateway.token(1);
    stub.setFaults({ loseNextPaymentAnswers: 2 });

    expect(await buy(gateway, token, 40)).toEqual({ status: 200, text: PROVIDER_UNAVAILABLE });

    const user = await eventually(
      async () => {
        const record = await userRecord(gateway, 1);
        return record?.pendingOrders?.length === 0 ? record : undefined;
      },
      5_000,
      'the sweep to credit the purchase',
    );
    expect(user.balanceUnits).toBe(405_000);
    const statusCalls = callsTo(stub, '/app/payment/status');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(callsTo(stub, '/app/payment/status')).toBe(statusCalls); // nothing left to ask about
    expect((await purchasesOf(gateway, 1)).map((purchase) => purchase.state)).toEqual(['credited']);
    expect(await quotaOf(gateway, token)).toBe(40.5);
    expect(stub.wallet('olga')).toBe(6);
  });

  it('records a purchase credited just before a crash cut off its record, without crediting it again', async () => {
    const stub: SsoStub = await startStub({ rosa: { wallet: 10 } });
    cleanups.push(() => stub.close());
    const gateway: TestGateway = await startOfficialGateway(stub, { SETTLEMENT_INTERVAL_MS: '100' });
    cleanups.push(() => gateway.stop());
    await gateway.seed({ users: [{ id: 1, username: 'rosa', quota: 0.5 }] });
    const token = await gateway.token(1);
    expect(await buy(gateway, token, 40)).toEqual({ status: 200, text: SUCCESS });
    const [purchase] = await purchasesOf(gateway, 1);

    // What a crash between the credit and the purchase's final state leaves behind, once its lease ran out.
    await gateway.models.purchases.updateOne(
      { orderId: purchase!.orderId },
      { $set: { state: 'pending', leaseUntil: new Date(0) } },
    );
    await eventually(
      async () => ((await purchasesOf(gateway, 1))[0]?.state === 'credited' ? true : undefined),
      5_000,
      'the sweep to settle the purchase',
    );

    expect(callsTo(stub, '/app/payment/status')).toBe(1);
    expect((await userRecord(gateway, 1))?.balanceUnits).toBe(405_000);
    expect(await quotaOf(gateway, token)).toBe(40.5);
    expect(stub.wallet('rosa')).toBe(6);
  });

  it('is stopped by a graceful stop, which lets a running settlement finish before the database closes', async () => {
    const stub: SsoStub = await startStub({ pavel: { wallet: 10 } });
    cleanups.push(() => stub.close());
    const database: TestDatabase = await startTestDatabase();
    cleanups.push(() => database.stop());
    const config = loadConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      MONGODB_URI: database.uri,
      JWT_SECRET: TEST_JWT_SECRET,
      LOG_LEVEL: 'silent',
      RATE_LIMIT: '0',
      ...officialEnvironment(stub, { SETTLEMENT_INTERVAL_MS: '50', ...QUICK_SSO }),
    });
    const service = await startService(config, createLogger(config));
    let stopped = false;
    cleanups.push(async () => stopped || service.stop());
    await loadSeed(service.domains, { users: [{ id: 1, username: 'pavel', quota: 0 }] });
    const token = await signAccessToken(secretKey(TEST_JWT_SECRET), 1);
    // Every answer arrives after 250 ms (within the 1 s timeout), and both payment answers are lost.
    stub.setFaults({ loseNextPaymentAnswers: 2, delayMs: 250 });
    expect(await buy(service, token, 20)).toEqual({ status: 200, text: PROVIDER_UNAVAILABLE });
    await eventually(async () => (callsTo(stub, '/app/payment/status') > 0 ? true : undefined), 3_000, 'the sweep to ask');

    await service.stop();
    stopped = true;

    const statusCalls = callsTo(stub, '/app/payment/status');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(callsTo(stub, '/app/payment/status')).toBe(statusCalls);
    const connection = await mongoose.createConnection(database.uri).asPromise();
    cleanups.push(() => connection.close());
    const purchases = await connection.collection('purchases').find({}).toArray();
    const user = await connection.collection('users').findOne({ id: 1 });
    expect(purchases.map((purchase) => purchase.state)).toEqual(['credited']);
    expect(user?.balanceUnits).toBe(200_000);
    expect(user?.pendingOrders).toEqual([]);
    expect(stub.wallet('pavel')).toBe(8);
  });
});
