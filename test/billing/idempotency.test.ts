import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import type { RunningService } from '../../src/service.js';
import type { SsoStub } from '../../src/sso-stub/stub-server.js';
import { ManualClock } from '../support/clock.js';
import { graphql, type TestGateway } from '../support/gateway.js';
import { startTestSidecar, type TestSidecar } from '../support/sidecar.js';
import {
  buy,
  NOT_CONFIRMED,
  NOT_ENOUGH_MONEY,
  purchasesOf,
  quotaOf,
  startAnotherInstance,
  startOfficialGateway,
  startStub,
  SUCCESS,
} from './official.js';

const DAY_MS = 24 * 60 * 60 * 1000;
const KEY_REUSED = '{"status":false,"error":"idempotency key already used for another quota, nothing was bought"}';
const BAD_KEY = '{"status":false,"error":"invalid idempotency key (1 ~ 255 visible ASCII characters)"}';
const BUY = 'mutation($quota: Int!, $key: String) { buy(quota: $quota, idempotencyKey: $key) { ok quota error { code message } } }';

let stub: SsoStub;
let first: TestGateway;
/** A second instance on the same database, with its own connection, settlement and sweep. */
let second: RunningService;
let sidecar: TestSidecar;
const clock = new ManualClock();
const tokens = new Map<number, string>();
const token = (userId: number): string => tokens.get(userId)!;

const names = ['amy', 'ben', 'cat', 'dan', 'eve', 'fay', 'gus', 'hal', 'ida', 'jo', 'kim', 'lee', 'max', 'ned', 'oli', 'pat'];
const users = names.map((username, index) => ({ id: index + 1, username, quota: 0 }));

/** A purchase left open is checked at most hourly, so that a day passes in few checks. */
const SETTLEMENT = { SETTLEMENT_BACKOFF_MAX_MS: '3600000' };

/** Another gateway instance on the first one's database and clock. */
const startInstance = () => startAnotherInstance(first, stub, SETTLEMENT, { clock });

beforeAll(async () => {
  stub = await startStub(Object.fromEntries(names.map((name) => [name, { wallet: name === 'dan' ? 1 : 100 }])));
  first = await startOfficialGateway(stub, SETTLEMENT, { clock });
  second = await startInstance();
  sidecar = await startTestSidecar(`${first.url}/graphql`);
  await first.seed({ users });
  for (const { id } of users) tokens.set(id, await first.token(id));
});

afterEach(() => stub.setFaults({}));

afterAll(async () => {
  await sidecar?.stop();
  await second?.stop();
  await first?.stop();
  await stub?.close();
});

/** The distinct orders the provider was asked to charge for a user. */
function ordersSentFor(username: string): string[] {
  const orders = stub.calls
    .filter((call) => call.path === '/app/payment')
    .map((call) => call.body as { user: string; order: string })
    .filter((payment) => payment.user === username)
    .map((payment) => payment.order);
  return [...new Set(orders)];
}

function buyOverGraphQL(gateway: { url: string }, userId: number, quota: number, key?: string) {
  return graphql(gateway, BUY, { authorization: token(userId), variables: { quota, key } }).then(({ body }) => body);
}

describe('buying with an idempotency key', () => {
  it('buys once for the same key sent twice over REST, answering the retry as the first request', async () => {
    const answers = [await buy(first, token(1), 100, 'intent-1'), await buy(first, token(1), 100, 'intent-1')];

    expect(answers).toEqual([
      { status: 200, text: SUCCESS },
      { status: 200, text: SUCCESS },
    ]);
    expect(await quotaOf(first, token(1))).toBe(100);
    expect(stub.wallet('amy')).toBe(90);
    const purchases = await purchasesOf(first, 1);
    expect(purchases).toEqual([expect.objectContaining({ idempotencyKey: 'intent-1', quota: 100, state: 'credited' })]);
    expect(ordersSentFor('amy')).toEqual([purchases[0]!.orderId]);
  });

  it('answers a GraphQL retry with ok and the balance now, buying once, and a REST retry with the same key alike', async () => {
    const answers = [await buyOverGraphQL(first, 2, 50, 'k'), await buyOverGraphQL(second, 2, 50, 'k')];

    expect(answers).toEqual([
      { data: { buy: { ok: true, quota: 50, error: null } } },
      { data: { buy: { ok: true, quota: 50, error: null } } },
    ]);
    expect(await buy(first, token(2), 50, 'k')).toEqual({ status: 200, text: SUCCESS });
    expect(await purchasesOf(first, 2)).toHaveLength(1);
    expect(ordersSentFor('ben')).toHaveLength(1);
    expect(stub.wallet('ben')).toBe(95);
  });

  it('answers a retry of a buy refused for want of money "not enough money", even once the wallet affords it', async () => {
    expect(await buy(first, token(4), 20, 'too-much')).toEqual({ status: 200, text: NOT_ENOUGH_MONEY });
    stub.setUser('dan', { wallet: 10 });

    expect(await buy(second, token(4), 20, 'too-much')).toEqual({ status: 200, text: NOT_ENOUGH_MONEY });
    expect(await buyOverGraphQL(first, 4, 20, 'too-much')).toEqual({
      data: { buy: { ok: false, quota: null, error: { code: 'INSUFFICIENT_FUNDS', message: 'not enough money' } } },
    });
    expect(ordersSentFor('dan')).toHaveLength(1);
    expect(stub.wallet('dan')).toBe(10);
    // The wallet does afford it now: a new intent buys.
    expect(await buy(first, token(4), 20, 'second-try')).toEqual({ status: 200, text: SUCCESS });
    expect(stub.wallet('dan')).toBe(8);
  });

  it('refuses the same key with another quota, buying nothing', async () => {
    expect(await buy(first, token(3), 100, 'same')).toEqual({ status: 200, text: SUCCESS });

    expect(await buy(second, token(3), 200, 'same')).toEqual({ status: 200, text: KEY_REUSED });
    expect(await buyOverGraphQL(first, 3, 300, 'same')).toEqual({
      data: {
        buy: {
          ok: false,
          quota: null,
          error: { code: 'INVALID_INPUT', message: 'idempotency key already used for another quota, nothing was bought' },
        },
      },
    });
    expect(await purchasesOf(first, 3)).toEqual([expect.objectContaining({ quota: 100, state: 'credited' })]);
    expect(ordersSentFor('cat')).toHaveLength(1);
    expect(stub.wallet('cat')).toBe(90);
    expect(await quotaOf(first, token(3))).toBe(100);
  });

  it('keeps the keys of different callers apart', async () => {
    expect(await buy(first, token(5), 30, 'shared-key')).toEqual({ status: 200, text: SUCCESS });
    expect(await buy(first, token(14), 40, 'shared-key')).toEqual({ status: 200, text: SUCCESS });

    expect(stub.wallet('eve')).toBe(97);
    expect(stub.wallet('ned')).toBe(96);
    expect((await purchasesOf(first, 5)).map((purchase) => [purchase.quota, purchase.idempotencyKey])).toEqual([[30, 'shared-key']]);
    expect((await purchasesOf(first, 14)).map((purchase) => [purchase.quota, purchase.idempotencyKey])).toEqual([[40, 'shared-key']]);
  });

  it('buys anew on every request without a key, as before, and stores no key for them', async () => {
    expect(await buy(first, token(15), 10)).toEqual({ status: 200, text: SUCCESS });
    expect(await buy(second, token(15), 10)).toEqual({ status: 200, text: SUCCESS });

    const purchases = await purchasesOf(first, 15);
    expect(purchases).toHaveLength(2);
    expect(purchases.some((purchase) => 'idempotencyKey' in purchase)).toBe(false);
    expect(stub.wallet('oli')).toBe(98);
  });

  it('refuses bad keys over REST and GraphQL with a clear sentence, changing nothing', async () => {
    const callsBefore = stub.calls.length;
    const headers: [string, string][][] = [
      [['idempotency-key', '']],
      [['idempotency-key', '   ']],
      [['idempotency-key', 'x'.repeat(256)]],
      [['idempotency-key', 'two words']],
      [['idempotency-key', 'caf\u00e9']],
      [
        ['idempotency-key', 'one'],
        ['idempotency-key', 'two'],
      ],
    ];
    for (const sent of headers) {
      const headerList = new Headers();
      for (const [name, value] of sent) headerList.append(name, value);
      const response = await fetch(`${first.url}/buy`, {
        method: 'POST',
        headers: [['authorization', token(7)], ['content-type', 'application/json'], ...headerList],
        body: '{"quota":10}',
      });
      expect({ sent, status: response.status, text: await response.text() }).toEqual({ sent, status: 200, text: BAD_KEY });
    }
    for (const key of ['', 'x'.repeat(256), 'two words', 'clé', 'ключ', 'tab\there', 'line\nbreak', '\u007f']) {
      expect(await buyOverGraphQL(first, 7, 10, key), JSON.stringify(key)).toEqual({
        data: {
          buy: { ok: false, quota: null, error: { code: 'INVALID_INPUT', message: JSON.parse(BAD_KEY).error } },
        },
      });
    }

    expect(stub.calls.length).toBe(callsBefore);
    expect(await purchasesOf(first, 7)).toEqual([]);
    expect(stub.wallet('gus')).toBe(100);
    // The longest key there can be, of the first and the last visible characters, is good.
    expect(await buy(first, token(7), 10, `!${'~'.repeat(254)}`)).toEqual({ status: 200, text: SUCCESS });
  });

  it('opens one purchase when buys with one key race on two instances, every one answering success', async () => {
    stub.setFaults({ delayMs: 300 });

    // The buys that lose the race look at the winner's purchase again after pauses on the clock: it follows real time here.
    const answers = await clock.followingRealTime(() =>
      Promise.all(Array.from({ length: 12 }, (_, index) => buy([first, second][index % 2]!, token(8), 50, 'race'))),
    );

    expect(answers.map((answer) => answer.text)).toEqual(Array.from({ length: 12 }, () => SUCCESS));
    expect(await purchasesOf(first, 8)).toEqual([expect.objectContaining({ state: 'credited', idempotencyKey: 'race' })]);
    expect(ordersSentFor('hal')).toHaveLength(1);
    expect(stub.wallet('hal')).toBe(95);
    expect(await quotaOf(second, token(8))).toBe(50);
  });

  it('answers a retry sent after the instance restarted from what the database holds', async () => {
    const before = await startInstance();
    expect(await buy(before, token(9), 70, 'before-restart')).toEqual({ status: 200, text: SUCCESS });
    await before.stop();

    const after = await startInstance();
    try {
      expect(await buy(after, token(9), 70, 'before-restart')).toEqual({ status: 200, text: SUCCESS });
    } finally {
      await after.stop();
    }
    expect(await purchasesOf(first, 9)).toHaveLength(1);
    expect(ordersSentFor('ida')).toHaveLength(1);
    expect(stub.wallet('ida')).toBe(93);
  });

  it('answers a retry of a purchase settled after its first answer by its settled state', async () => {
    stub.setFaults({ loseNextPaymentAnswers: 2 });
    expect(await buy(first, token(10), 60, 'lost-answers')).toEqual({ status: 200, text: NOT_CONFIRMED });
    expect(stub.wallet('jo')).toBe(94);

    expect(await buy(second, token(10), 60, 'lost-answers')).toEqual({ status: 200, text: SUCCESS });
    expect(await buy(first, token(10), 60, 'lost-answers')).toEqual({ status: 200, text: SUCCESS });
    expect(await quotaOf(first, token(10))).toBe(60);
    expect(stub.wallet('jo')).toBe(94);
    expect(ordersSentFor('jo')).toHaveLength(1);
    expect((await purchasesOf(first, 10)).map((purchase) => purchase.state)).toEqual(['credited']);
  });

  it('answers "not confirmed yet" to a retry while the purchase is still open, sending no other order', async () => {
    stub.setFaults({ down: true });
    expect(await buy(first, token(11), 80, 'open')).toEqual({ status: 200, text: NOT_CONFIRMED });

    expect(await buy(second, token(11), 80, 'open')).toEqual({ status: 200, text: NOT_CONFIRMED });
    expect(await buyOverGraphQL(first, 11, 80, 'open')).toEqual({
      data: { buy: { ok: false, quota: null, error: { code: 'UNAVAILABLE', message: JSON.parse(NOT_CONFIRMED).error } } },
    });
    expect((await purchasesOf(first, 11)).map((purchase) => purchase.state)).toEqual(['pending']);
    expect(ordersSentFor('kim')).toHaveLength(1);
    expect(stub.wallet('kim')).toBe(100);
  });

  it('buys afresh when the purchase holding the key was cut off before its order was sent', async () => {
    // What a buy killed between recording its purchase and sending the order leaves, once its lease is over.
    await first.models.purchases.create({
      orderId: 'cut-off-before-sending',
      userId: 12,
      username: 'lee',
      quota: 90,
      amount: 9,
      idempotencyKey: 'cut-off',
      state: 'opened',
      openedAt: new Date(clock.now() - 60_000),
      checks: 0,
      nextCheckAt: new Date(clock.now() - 1),
      leaseOwner: 'a process that died',
    });

    expect(await buy(second, token(12), 90, 'cut-off')).toEqual({ status: 200, text: SUCCESS });
    expect(await buy(first, token(12), 90, 'cut-off')).toEqual({ status: 200, text: SUCCESS });

    const [cutOff, bought, ...others] = await purchasesOf(first, 12);
    expect(others).toEqual([]);
    expect(cutOff).toMatchObject({ orderId: 'cut-off-before-sending', state: 'declined', declineReason: 'never-sent' });
    expect(cutOff).not.toHaveProperty('idempotencyKey');
    expect(bought).toMatchObject({ state: 'credited', idempotencyKey: 'cut-off' });
    expect(ordersSentFor('lee')).toEqual([bought!.orderId]);
    expect(stub.wallet('lee')).toBe(91);
  });

  it('waits on the clock for a purchase another instance holds, and settles it itself once that lease is over', async () => {
    stub.setFaults({ loseNextPaymentAnswers: 2 });
    expect(await buy(first, token(16), 30, 'held')).toEqual({ status: 200, text: NOT_CONFIRMED });
    stub.setFaults({});
    const [lost] = await purchasesOf(first, 16);
    // As if another instance had just taken it up to ask the provider, and were still at it: its lease runs 2 s more.
    await first.models.purchases.updateOne(
      { orderId: lost!.orderId },
      { $set: { leaseOwner: 'another instance#1', nextCheckAt: new Date(clock.now() + 2_000) } },
    );

    const waitingBefore = clock.dueWithin(20);
    let answered = false;
    const retry = buy(second, token(16), 30, 'held').finally(() => {
      answered = true;
    });
    // The retry finds the purchase held, and waits on the clock: its first pause, 20 ms.
    await expect.poll(() => clock.dueWithin(20), { timeout: 10_000, interval: 5 }).toBe(waitingBefore + 1);
    expect(answered).toBe(false);

    // Past the other instance's lease, the retry settles the purchase itself, as the sweep would.
    await clock.advance(2_000);
    expect(await retry).toEqual({ status: 200, text: SUCCESS });
    expect((await purchasesOf(first, 16)).map((purchase) => purchase.state)).toEqual(['credited']);
    expect(ordersSentFor('pat')).toEqual([lost!.orderId]);
    expect(stub.wallet('pat')).toBe(97);
    expect(await quotaOf(second, token(16))).toBe(30);
  });

  it('carries the key through the REST sidecar', async () => {
    expect(await buy(sidecar, token(13), 20, 'via-sidecar')).toEqual({ status: 200, text: SUCCESS });
    expect(await buy(sidecar, token(13), 20, 'via-sidecar')).toEqual({ status: 200, text: SUCCESS });
    expect(await buy(first, token(13), 20, 'via-sidecar')).toEqual({ status: 200, text: SUCCESS });
    expect(await buy(sidecar, token(13), 30, 'via-sidecar')).toEqual({ status: 200, text: KEY_REUSED });
    expect(await buy(sidecar, token(13), 20, 'not a key')).toEqual({ status: 200, text: BAD_KEY });

    expect(await purchasesOf(first, 13)).toEqual([expect.objectContaining({ idempotencyKey: 'via-sidecar', state: 'credited' })]);
    expect(ordersSentFor('max')).toHaveLength(1);
    expect(stub.wallet('max')).toBe(98);
  });

  // Last: it moves the shared clock a day ahead.
  it('lets a key buy again once 24 hours have passed since its purchase was opened', async () => {
    expect(await buy(first, token(6), 10, 'daily')).toEqual({ status: 200, text: SUCCESS });
    await clock.advance(DAY_MS - 1);
    expect(await buy(second, token(6), 10, 'daily')).toEqual({ status: 200, text: SUCCESS });
    expect(await purchasesOf(first, 6)).toHaveLength(1);

    await clock.advance(1);
    expect(await buy(second, token(6), 10, 'daily')).toEqual({ status: 200, text: SUCCESS });

    const [yesterday, today, ...others] = await purchasesOf(first, 6);
    expect(others).toEqual([]);
    expect(yesterday).not.toHaveProperty('idempotencyKey');
    expect(today).toMatchObject({ state: 'credited', idempotencyKey: 'daily' });
    expect(ordersSentFor('fay')).toEqual([yesterday!.orderId, today!.orderId]);
    expect(stub.wallet('fay')).toBe(98);
    expect(await quotaOf(first, token(6))).toBe(20);
  });
});
