import mongoose from 'mongoose';
import { afterEach, describe, expect, it } from 'vitest';

import { secretKey, signAccessToken } from '../../src/auth/access-token.js';
import { loadConfig } from '../../src/config.js';
import { loadSeed } from '../../src/seed/seed-file.js';
import { startService } from '../../src/service.js';
import type { SsoStub } from '../../src/sso-stub/stub-server.js';
import { captureLog } from '../support/captured-log.js';
import { ManualClock } from '../support/clock.js';
import { startTestDatabase, type TestDatabase } from '../support/database.js';
import { TEST_JWT_SECRET, type TestGateway } from '../support/gateway.js';
import { sample, scrapeMetrics } from '../support/metrics.js';
import {
  buy,
  callsTo,
  eventually,
  NOT_CONFIRMED,
  officialEnvironment,
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

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** A stub provider with one user, and an official gateway in front of it on a clock the test moves. */
async function officialSetup(user: string, wallet: number, environment: Record<string, string> = {}) {
  const stub: SsoStub = await startStub({ [user]: { wallet } });
  cleanups.push(() => stub.close());
  const clock = new ManualClock();
  const log = captureLog();
  const gateway: TestGateway = await startOfficialGateway(stub, environment, { clock, logger: log.logger });
  cleanups.push(() => gateway.stop());
  await gateway.seed({ users: [{ id: 1, username: user, quota: 0.5 }] });
  return { stub, clock, log, gateway, token: await gateway.token(1) };
}

describe('the settlement sweep', () => {
  it('credits a payment whose answers were lost without any request from its user, exactly once', async () => {
    const { stub, clock, gateway, token } = await officialSetup('olga', 10, { SETTLEMENT_INTERVAL_MS: '100' });
    stub.setFaults({ loseNextPaymentAnswers: 2 });

    expect(await buy(gateway, token, 40)).toEqual({ status: 200, text: NOT_CONFIRMED });
    await clock.advance(0);

    const user = await userRecord(gateway, 1);
    expect(user?.pendingOrders).toEqual([]);
    expect(user?.balanceMicros).toBe(40_500_000);
    const statusCalls = callsTo(stub, '/app/payment/status');
    await clock.advance(10_000); // a hundred sweeps
    expect(callsTo(stub, '/app/payment/status')).toBe(statusCalls); // nothing left to ask about
    expect((await purchasesOf(gateway, 1)).map((purchase) => purchase.state)).toEqual(['credited']);
    expect(await quotaOf(gateway, token)).toBe(40.5);
    expect(stub.wallet('olga')).toBe(6);
  });

  it('completes a credit cut off by a crash after the points were added, without adding them again or asking the provider', async () => {
    const { stub, clock, gateway, token } = await officialSetup('rosa', 10);
    expect(await buy(gateway, token, 40)).toEqual({ status: 200, text: SUCCESS });
    const [purchase] = await purchasesOf(gateway, 1);

    // What a crash between the user's update and the purchase's final state leaves behind, once its lease ran out.
    await gateway.models.purchases.updateOne(
      { orderId: purchase!.orderId },
      { $set: { state: 'crediting', nextCheckAt: new Date(clock.now()) }, $unset: { closedAt: 1 } },
    );
    await clock.advance(0);

    expect((await purchasesOf(gateway, 1))[0]?.state).toBe('credited');
    expect(callsTo(stub, '/app/payment/status')).toBe(0);
    expect((await userRecord(gateway, 1))?.balanceMicros).toBe(40_500_000);
    expect(await quotaOf(gateway, token)).toBe(40.5);
    expect(stub.wallet('rosa')).toBe(6);
  });

  it('completes a credit cut off by a crash before the points were added, adding them once', async () => {
    const { stub, clock, gateway, token } = await officialSetup('sami', 10);
    expect(await buy(gateway, token, 40)).toEqual({ status: 200, text: SUCCESS });
    const [purchase] = await purchasesOf(gateway, 1);

    // What a crash right after the provider's "paid" was recorded leaves behind: the user not yet credited.
    await gateway.models.purchases.updateOne(
      { orderId: purchase!.orderId },
      { $set: { state: 'crediting', nextCheckAt: new Date(clock.now()) }, $unset: { closedAt: 1 } },
    );
    await gateway.models.users.updateOne({ id: 1 }, { $set: { balanceMicros: 500_000 }, $addToSet: { pendingOrders: purchase!.orderId } });
    await Promise.all([clock.advance(0), quotaOf(gateway, token), quotaOf(gateway, token)]);

    expect((await purchasesOf(gateway, 1))[0]?.state).toBe('credited');
    expect(await userRecord(gateway, 1)).toMatchObject({ balanceMicros: 40_500_000, pendingOrders: [] });
    expect(callsTo(stub, '/app/payment/status')).toBe(0);
    expect(stub.wallet('sami')).toBe(6);
  });

  it('closes a purchase whose buy stopped before sending its order, without asking the provider', async () => {
    const { stub, clock, gateway, token } = await officialSetup('tara', 10);
    // What a crash between recording the purchase and sending its order leaves behind.
    await gateway.models.purchases.create({
      orderId: 'order-never-sent',
      userId: 1,
      username: 'tara',
      quota: 30,
      amount: 3,
      state: 'opened',
      openedAt: new Date(clock.now()),
      checks: 0,
      nextCheckAt: new Date(clock.now() + MINUTE),
      leaseOwner: 'a-crashed-instance#1',
    });
    await gateway.models.users.updateOne({ id: 1 }, { $addToSet: { pendingOrders: 'order-never-sent' } });

    await clock.advance(MINUTE - 1);
    expect((await purchasesOf(gateway, 1))[0]?.state).toBe('opened'); // its buy may still be at work
    await clock.advance(1);

    expect((await purchasesOf(gateway, 1))[0]).toMatchObject({ state: 'declined', declineReason: 'never-sent' });
    expect((await userRecord(gateway, 1))?.pendingOrders).toEqual([]);
    expect(await quotaOf(gateway, token)).toBe(0.5);
    expect(stub.calls).toEqual([]);
  });

  it('asks again about an order the provider does not know, ever less often, with its schedule kept in the database', async () => {
    const { stub, clock, gateway, token } = await officialSetup('uma', 10, { SETTLEMENT_BACKOFF_MAX_MS: '4000' });
    stub.setFaults({ down: true });
    expect(await buy(gateway, token, 20)).toEqual({ status: 200, text: NOT_CONFIRMED });
    stub.setFaults({});

    const pauses: number[] = [];
    for (let check = 1; check <= 6; check += 1) {
      const before = callsTo(stub, '/app/payment/status');
      const [purchase] = await purchasesOf(gateway, 1);
      const wait = purchase!.nextCheckAt!.getTime() - clock.now();
      if (wait > 0) {
        await clock.advance(wait - 1);
        expect(callsTo(stub, '/app/payment/status')).toBe(before); // not a millisecond early
      }
      await clock.advance(Math.min(wait, 1));
      expect(callsTo(stub, '/app/payment/status')).toBe(before + 1);
      const [after] = await purchasesOf(gateway, 1);
      expect(after).toMatchObject({ state: 'pending', checks: check, lastCheck: 'the provider answered unknown' });
      pauses.push(after!.nextCheckAt!.getTime() - clock.now());
    }

    expect(pauses).toEqual([500, 1_000, 2_000, 4_000, 4_000, 4_000]);
    expect(await quotaOf(gateway, token)).toBe(0.5);
    expect(stub.wallet('uma')).toBe(10);
  });

  it('lets a balance read wait one second on the clock for its settlement, then answers without it', async () => {
    const { stub, clock, gateway, token } = await officialSetup('vera', 10, QUICK_SSO);
    stub.setFaults({ down: true });
    expect(await buy(gateway, token, 20)).toEqual({ status: 200, text: NOT_CONFIRMED });

    // The provider hangs: the read's settlement of its due order is under way, and will not end soon.
    stub.setFaults({ delayMs: 10_000 });
    const statusCalls = callsTo(stub, '/app/payment/status');
    const waitingBefore = clock.dueWithin(1_000);
    let answered = false;
    const read = quotaOf(gateway, token).finally(() => {
      answered = true;
    });
    await expect
      .poll(() => [callsTo(stub, '/app/payment/status') > statusCalls, clock.dueWithin(1_000) > waitingBefore], {
        timeout: 10_000,
        interval: 5,
      })
      .toEqual([true, true]);
    await clock.advance(999);
    expect(answered).toBe(false);

    await clock.advance(1);
    expect(await read).toBe(0.5);
    stub.setFaults({});
  });

  it('keeps an order the provider holds open past the horizon, flags it for review, and credits it when the provider acts', async () => {
    const { stub, clock, log, gateway, token } = await officialSetup('vera', 10, {
      SSO_TIMEOUT_MS: '200',
      SSO_ATTEMPTS: '1',
      SETTLEMENT_HORIZON: '1h',
    });
    // The provider takes the payment, but its worker acts on it only 1.5 s later.
    stub.setFaults({ stallMs: 1_500 });
    expect(await buy(gateway, token, 50)).toEqual({ status: 200, text: NOT_CONFIRMED });
    // Meanwhile it is unreachable; the gateway keeps asking for hours by its clock.
    stub.setFaults({ down: true });
    await clock.advance(2 * HOUR);

    const [held] = await purchasesOf(gateway, 1);
    expect(held).toMatchObject({ state: 'pending', lastCheck: expect.stringMatching(/HTTP 503/) });
    expect(held!.reviewSince?.getTime()).toBeGreaterThanOrEqual(held!.openedAt.getTime() + HOUR);
    const metrics = await scrapeMetrics(gateway.url);
    expect(sample(metrics, 'purchases_needing_review')).toBe(1);
    expect(sample(metrics, 'purchases_unfinished', { state: 'pending' })).toBe(1);
    expect(sample(metrics, 'purchases_oldest_unfinished_age_seconds')).toBe(2 * 3_600);
    const errors = log.lines().filter((line) => line.level === 50);
    expect(errors).toEqual([expect.objectContaining({ orderId: held!.orderId, userId: 1, msg: expect.stringMatching(/needs review/) })]);

    await eventually(async () => (stub.stalled() === 0 ? true : undefined), 5_000, 'the stalled worker to charge the order');
    expect(stub.paidOrders()).toEqual([held!.orderId]);
    stub.setFaults({});
    await clock.advance(5 * MINUTE); // the longest pause between checks

    expect(await quotaOf(gateway, token)).toBe(50.5);
    expect((await purchasesOf(gateway, 1))[0]).toMatchObject({ state: 'credited', reviewSince: held!.reviewSince });
    expect(stub.wallet('vera')).toBe(5);
    const after = await scrapeMetrics(gateway.url);
    expect(sample(after, 'purchases_needing_review')).toBe(0);
    expect(sample(after, 'purchases_unfinished', { state: 'pending' })).toBe(0);
    expect(sample(after, 'purchases_closed_total', { state: 'credited', reason: 'paid' })).toBe(1);
  });

  it('is stopped by a graceful stop, which lets a running settlement finish before the database closes', async () => {
    const stub: SsoStub = await startStub({ pavel: { wallet: 10 } });
    cleanups.push(() => stub.close());
    const database: TestDatabase = await startTestDatabase();
    cleanups.push(() => database.stop());
    const config = loadConfig({
      DATA_DIR: 'memory',
      PORT: '0',
      HOST: '127.0.0.1',
      MONGODB_URI: database.uri,
      JWT_SECRET: TEST_JWT_SECRET,
      LOG_LEVEL: 'silent',
      RATE_LIMIT: '0',
      ...officialEnvironment(stub, { SETTLEMENT_INTERVAL_MS: '50', ...QUICK_SSO }),
    });
    const clock = new ManualClock();
    const service = await startService(config, captureLog().logger, { clock });
    let stopped = false;
    cleanups.push(async () => stopped || service.stop());
    await loadSeed(service.domains, { users: [{ id: 1, username: 'pavel', quota: 0 }] });
    const token = await signAccessToken(secretKey(TEST_JWT_SECRET), 1);
    // Every answer arrives after 250 ms (within the 1 s timeout), and both payment answers are lost.
    stub.setFaults({ loseNextPaymentAnswers: 2, delayMs: 250 });
    expect(await buy(service, token, 20)).toEqual({ status: 200, text: NOT_CONFIRMED });
    const sweeping = clock.advance(0);
    await eventually(async () => (callsTo(stub, '/app/payment/status') > 0 ? true : undefined), 3_000, 'the sweep to ask');

    await service.stop();
    stopped = true;
    await sweeping;

    const statusCalls = callsTo(stub, '/app/payment/status');
    await clock.advance(HOUR);
    expect(callsTo(stub, '/app/payment/status')).toBe(statusCalls);
    const connection = await mongoose.createConnection(database.uri).asPromise();
    cleanups.push(() => connection.close());
    const purchases = await connection.collection('purchases').find({}).toArray();
    const user = await connection.collection('users').findOne({ id: 1 });
    expect(purchases.map((purchase) => purchase.state)).toEqual(['credited']);
    expect(user?.balanceMicros).toBe(20_000_000);
    expect(user?.pendingOrders).toEqual([]);
    expect(stub.wallet('pavel')).toBe(8);
  });
});
