import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { RunningService } from '../../src/service.js';
import type { SsoStub } from '../../src/sso-stub/stub-server.js';
import { ManualClock } from '../support/clock.js';
import type { TestGateway } from '../support/gateway.js';
import {
  buy,
  callsTo,
  NOT_CONFIRMED,
  NOT_ENOUGH_MONEY,
  purchasesOf,
  quotaOf,
  rest,
  startAnotherInstance,
  startOfficialGateway,
  startStub,
  SUCCESS,
  userRecord,
} from './official.js';

let stub: SsoStub;
let first: TestGateway;
let second: RunningService;
const tokens = new Map<number, string>();
const token = (userId: number): string => tokens.get(userId)!;
/** Both instances' purchases and sweeps go by it. */
const clock = new ManualClock();

/** Two gateway instances, each with its own connection, settlement and sweep, on one database. */
beforeAll(async () => {
  stub = await startStub({
    anna: { wallet: 24 },
    boris: { cert: true, teenager: true },
    chen: { wallet: 100 },
  });
  const environment = { SETTLEMENT_INTERVAL_MS: '50' };
  first = await startOfficialGateway(stub, environment, { clock });
  second = await startAnotherInstance(first, stub, environment, { clock });
  await first.seed({
    users: [
      { id: 1, username: 'anna', quota: 0.25 },
      { id: 2, username: 'boris', quota: 1 },
      { id: 3, username: 'chen', quota: 0 },
    ],
  });
  for (const id of [1, 2, 3]) tokens.set(id, await first.token(id));
});

afterAll(async () => {
  await second?.stop();
  await first?.stop();
  await stub?.close();
});

const instances = () => [first, second];

describe('two gateway instances on one database', () => {
  it('let exactly the affordable buys succeed when 30 race across both', async () => {
    // The wallet affords 8 buys of 30 points (3 money each).
    const answers = await Promise.all(Array.from({ length: 30 }, (_, index) => buy(instances()[index % 2]!, token(1), 30)));

    expect(answers.filter((answer) => answer.text === SUCCESS)).toHaveLength(8);
    expect(answers.filter((answer) => answer.text === NOT_ENOUGH_MONEY)).toHaveLength(22);
    expect(stub.wallet('anna')).toBe(0);
    expect(await quotaOf(first, token(1))).toBe(240.25);
    expect(await quotaOf(second, token(1))).toBe(240.25);
  });

  it('grant each gift once when 25 package requests race across both', async () => {
    const answers = await Promise.all(Array.from({ length: 25 }, (_, index) => rest(instances()[index % 2]!, token(2), '/package')));

    expect(new Set(answers.map((answer) => answer.text))).toEqual(new Set(['{"status":true,"data":{"cert":true,"teenager":true}}']));
    expect(await quotaOf(second, token(2))).toBe(201);
    expect(await first.models.giftGrants.countDocuments({ userId: 2 })).toBe(2);
  });

  it('credit purchases whose answers were lost exactly once while both sweep and read at once', async () => {
    stub.setFaults({ loseNextPaymentAnswers: 6 });
    const lost = await Promise.all([buy(first, token(3), 100), buy(second, token(3), 200), buy(first, token(3), 300)]);
    expect(lost.map((answer) => answer.text)).toEqual([NOT_CONFIRMED, NOT_CONFIRMED, NOT_CONFIRMED]);
    expect(stub.wallet('chen')).toBe(40);

    const [reads] = await Promise.all([
      Promise.all(Array.from({ length: 20 }, (_, index) => quotaOf(instances()[index % 2]!, token(3)))),
      clock.advance(0), // both sweeps run a pass meanwhile
    ]);

    expect(reads.every((quota) => [0, 100, 200, 300, 400, 500, 600].includes(quota))).toBe(true);
    expect(await quotaOf(first, token(3))).toBe(600);
    // Both sweeps run a few hundred times: nothing changes.
    await clock.advance(10_000);
    expect(await quotaOf(second, token(3))).toBe(600);
    expect((await purchasesOf(first, 3)).map((purchase) => purchase.state)).toEqual(['credited', 'credited', 'credited']);
    expect((await userRecord(first, 3))?.pendingOrders).toEqual([]);
    expect(stub.wallet('chen')).toBe(40);
    // Leases: however many sweeps and reads raced, each order was asked about once.
    expect(callsTo(stub, '/app/payment/status')).toBe(3);
  });
});
