import type { Document } from 'mongodb';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { pointsToMicros } from '../../src/accounts/points.js';
import type { SsoStub } from '../../src/sso-stub/stub-server.js';
import { NOT_CONFIRMED, officialEnvironment, QUICK_SSO, startStub, SUCCESS } from '../billing/official.js';
import { ManualClock } from '../support/clock.js';
import { type FaultDatabase, faultSuiteTitle, faultTestsUnavailable, startFaultDatabase } from '../support/fail-points.js';
import { graphql, type TestGateway } from '../support/gateway.js';
import { expectDatabaseUnavailable, rest, startFaultGateway, unavailableAnswer } from './database-faults.js';

/**
 * The writes that move money, while the database fails under them as an election, a failover or a
 * lagging replica set makes it fail: each write of a buy, of its settlement, of a gift grant and
 * of an idempotency key, with its reply lost after the server applied it, its connection closed
 * before it ran, a retryable error (10107, 11602, 91), and a write concern error after it was
 * applied (retryable, or a timeout the driver does not retry: its outcome unknown). Whatever the
 * fault, each write takes effect once: every buyer's balance is the seed plus 10 points per unit
 * of money the provider took, plus the gifts, to the micro-point.
 *
 * Each fault is set for one write: a fail point armed while the reply to the command before it is
 * held by the proxy, or the proxy losing that write's own reply. The clock is moved by hand, so
 * the settlement sweep runs exactly when a test says.
 */

const unavailableHere = await faultTestsUnavailable();

type Match = (command: Document) => boolean;

/** One write of a flow: its command, and the command just before it in the same flow. */
interface Write {
  name: string;
  command: 'insert' | 'update' | 'findAndModify';
  collection: 'users' | 'purchases' | 'giftGrants';
  is: Match;
  previous: Match;
}

const updateOf = (command: Document): Document | undefined => (Array.isArray(command.updates) ? command.updates[0]?.u : undefined);
const finds =
  (collection: string): Match =>
  (command) =>
    command.find === collection;
const inserts =
  (collection: string): Match =>
  (command) =>
    command.insert === collection;
const setsState =
  (state: string): Match =>
  (command) =>
    command.update === 'purchases' && updateOf(command)?.$set?.state === state;
const addsPendingOrder: Match = (command) => command.update === 'users' && updateOf(command)?.$addToSet?.pendingOrders !== undefined;
const creditsOrder: Match = (command) => command.findAndModify === 'users' && command.query?.pendingOrders !== undefined;
const claimsPurchase: Match = (command) => command.findAndModify === 'purchases';
const creditsGift: Match = (command) => command.update === 'users' && updateOf(command)?.$addToSet?.grantedGifts !== undefined;
const releasesKey: Match = (command) => command.update === 'purchases' && updateOf(command)?.$unset?.idempotencyKey !== undefined;

/** The database writes of a buy whose provider says paid, in order. The first three come before the order is sent. */
const BUY_WRITES: Write[] = [
  { name: 'the purchase recorded', command: 'insert', collection: 'purchases', is: inserts('purchases'), previous: finds('users') },
  {
    name: 'the order put on the buyer’s list',
    command: 'update',
    collection: 'users',
    is: addsPendingOrder,
    previous: inserts('purchases'),
  },
  { name: 'the purchase marked pending', command: 'update', collection: 'purchases', is: setsState('pending'), previous: addsPendingOrder },
  {
    name: 'the purchase marked paid',
    command: 'update',
    collection: 'purchases',
    is: setsState('crediting'),
    previous: setsState('pending'),
  },
  { name: 'the points credited', command: 'findAndModify', collection: 'users', is: creditsOrder, previous: setsState('crediting') },
  { name: 'the purchase closed', command: 'update', collection: 'purchases', is: setsState('credited'), previous: creditsOrder },
];
const SENT_AFTER = 3;

/** The database writes of the settlement of a pending purchase found paid. */
const SETTLEMENT_WRITES: Write[] = [
  {
    name: 'the purchase claimed for a check',
    command: 'findAndModify',
    collection: 'purchases',
    is: claimsPurchase,
    previous: finds('purchases'),
  },
  { name: 'the purchase marked paid', command: 'update', collection: 'purchases', is: setsState('crediting'), previous: claimsPurchase },
  { name: 'the points credited', command: 'findAndModify', collection: 'users', is: creditsOrder, previous: setsState('crediting') },
  { name: 'the purchase closed', command: 'update', collection: 'purchases', is: setsState('credited'), previous: creditsOrder },
];

/** The database writes of a gift grant. */
const GIFT_WRITES: Write[] = [
  { name: 'the gift claimed', command: 'insert', collection: 'giftGrants', is: inserts('giftGrants'), previous: finds('giftGrants') },
  { name: 'the gift’s points credited', command: 'update', collection: 'users', is: creditsGift, previous: inserts('giftGrants') },
  {
    name: 'the claim marked credited',
    command: 'update',
    collection: 'giftGrants',
    is: (command) => command.update === 'giftGrants',
    previous: creditsGift,
  },
];

interface Fault {
  name: string;
  /** `retried`: the driver retries the write, which then takes effect once; `unknown`: the write is applied, and the driver throws. */
  outcome: 'retried' | 'unknown';
  /** A fail point's data, or the proxy losing the reply. */
  data?: Document;
}

const FAULTS: Fault[] = [
  { name: 'its reply lost after the server applied it', outcome: 'retried' },
  { name: 'its connection closed before it ran', outcome: 'retried', data: { closeConnection: true } },
  ...[10107, 11602, 91].map((errorCode) => ({
    name: `${errorCode}, RetryableWriteError`,
    outcome: 'retried' as const,
    data: { errorCode },
  })),
  {
    name: 'a write concern error 91 (RetryableWriteError) after it was applied',
    outcome: 'retried',
    data: { writeConcernError: { code: 91, codeName: 'ShutdownInProgress', errmsg: 'Replication is being shut down' } },
  },
  {
    name: 'a write concern timeout (64, not retried) after it was applied',
    outcome: 'unknown',
    data: {
      writeConcernError: {
        code: 64,
        codeName: 'WriteConcernFailed',
        errmsg: 'waiting for replication timed out',
        errInfo: { wtimeout: true },
      },
    },
  },
];
const cases = (writes: Write[], faults: Fault[] = FAULTS) =>
  writes.flatMap((write, index) => faults.map((fault) => ({ write, index, fault, label: `${write.name}: ${fault.name}` })));

/**
 * What a buyer is told when a write of their buy fails. A write the driver retries takes effect
 * once: success. One whose outcome is unknown, before the order is sent, stops the buy: nothing
 * is charged, try again. After, the provider's answer stands: the points are added by the
 * settlement, or are there already once credited.
 */
function toldAfter(index: number, fault: Fault): 'success' | 'not-confirmed' | 'unavailable' {
  if (fault.outcome === 'retried') return 'success';
  if (index < SENT_AFTER) return 'unavailable';
  return index === BUY_WRITES.length - 1 ? 'success' : 'not-confirmed';
}

const QUOTA = 120;
const SEED_POINTS = 3.5;
const WALLET = 1_000;
const GIFT_PACKAGE = '{"status":true,"data":{"cert":true,"teenager":false}}';

describe.skipIf(unavailableHere !== undefined)(faultSuiteTitle('money under database faults', unavailableHere), () => {
  let faults: FaultDatabase;
  let stub: SsoStub;
  let gateway: TestGateway;
  const clock = new ManualClock();
  let lastUserId = 0;
  const people: { id: number; username: string }[] = [];

  beforeAll(async () => {
    faults = await startFaultDatabase();
    stub = await startStub({});
    gateway = await startFaultGateway(faults, officialEnvironment(stub, QUICK_SSO), { clock });
  });
  afterAll(async () => {
    await gateway?.stop();
    await stub?.close();
    await faults?.stop();
  });
  afterEach(async () => {
    await faults.off();
    stub.setFaults({});
  });

  /** A new buyer with money in their wallet (and the certification, for gifts): their own balance and ledger. */
  async function newBuyer(): Promise<{ id: number; authorization: string; username: string }> {
    const id = (lastUserId += 1);
    const username = `buyer${id}`;
    stub.setUser(username, { wallet: WALLET, cert: true, teenager: false });
    await gateway.seed({ users: [{ id, username, quota: SEED_POINTS }] });
    people.push({ id, username });
    return { id, username, authorization: `Bearer ${await gateway.token(id)}` };
  }

  /** Sets the fault on one write: the proxy loses its reply, or a fail point for it is armed while the command before it is answered. */
  function inject(write: Write, fault: Fault): void {
    const { data } = fault;
    if (data === undefined) return faults.proxy.loseReplies(write.is);
    const namespace = `${faults.database.dbName}.${write.collection}`;
    faults.proxy.holdReply(write.previous, () => faults.failCommand({ times: 1 }, { failCommands: [write.command], namespace, ...data }));
  }

  /** That the fault hit its write once. */
  async function expectInjected(fault: Fault, lostBefore: number): Promise<void> {
    if (fault.data === undefined) expect(faults.proxy.lostReplies()).toHaveLength(lostBefore + 1);
    else expect((await faults.off()).failCommand).toBe(1);
  }

  /** Passes of the settlement sweep, as time goes by: every purchase that can be settled is. */
  async function sweep(): Promise<void> {
    for (let pass = 0; pass < 3; pass += 1) await clock.advance(60_000);
  }

  const user = (id: number) => faults.db.collection('users').findOne({ id });
  const purchasesOf = (userId: number) => faults.db.collection('purchases').find({ userId }).sort({ openedAt: 1 }).toArray();
  const chargedTo = (username: string) => stub.charges().filter((charge) => charge.user === username);

  /** The buyer's balance is the seed plus what the provider took, exactly, and nothing awaits credit. */
  async function expectLedger(buyer: { id: number; username: string }, giftPoints = 0): Promise<void> {
    const charged = chargedTo(buyer.username);
    const chargedCents = charged.reduce((sum, charge) => sum + Math.round(charge.amount * 100), 0);
    const record = await user(buyer.id);
    expect(record?.balanceMicros).toBe(pointsToMicros(SEED_POINTS) + pointsToMicros(chargedCents / 10) + pointsToMicros(giftPoints));
    expect(record?.pendingOrders ?? []).toEqual([]);
    expect(new Set(charged.map((charge) => charge.order)).size).toBe(charged.length);
  }

  type Told = ReturnType<typeof toldAfter>;

  /** A buy over REST or GraphQL, and that it was told `told`. */
  async function buyAndExpect(
    buyer: { authorization: string },
    door: 'rest' | 'graphql',
    told: Told,
    idempotencyKey?: string,
  ): Promise<void> {
    if (door === 'rest') {
      const answer = await fetch(`${gateway.url}/buy`, {
        method: 'POST',
        headers: {
          authorization: buyer.authorization,
          'content-type': 'application/json',
          ...(idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey }),
        },
        body: JSON.stringify({ quota: QUOTA }),
      });
      const expected = {
        success: { status: 200, text: SUCCESS },
        'not-confirmed': { status: 200, text: NOT_CONFIRMED },
        unavailable: unavailableAnswer('error'),
      };
      expect({ status: answer.status, text: await answer.text() }).toEqual(expected[told]);
      return;
    }
    const response = await graphql(
      gateway,
      'mutation ($quota: Int!, $key: String) { buy(quota: $quota, idempotencyKey: $key) { ok error { code message } quota } }',
      {
        authorization: buyer.authorization,
        variables: { quota: QUOTA, key: idempotencyKey },
      },
    );
    if (told === 'unavailable') return expectDatabaseUnavailable(response);
    expect(response.status).toBe(200);
    expect(response.body.data).toEqual({
      buy:
        told === 'success'
          ? { ok: true, error: null, quota: SEED_POINTS + QUOTA }
          : { ok: false, error: { code: 'UNAVAILABLE', message: JSON.parse(NOT_CONFIRMED).error }, quota: null },
    });
  }

  describe('a buy', () => {
    it.each(cases(BUY_WRITES))('$label', async ({ write, index, fault }) => {
      const buyer = await newBuyer();
      const lostBefore = faults.proxy.lostReplies().length;
      inject(write, fault);
      const told = toldAfter(index, fault);
      await buyAndExpect(buyer, index % 2 === 0 ? 'rest' : 'graphql', told);
      await expectInjected(fault, lostBefore);
      await sweep();

      const charged = chargedTo(buyer.username);
      const [purchase, ...others] = await purchasesOf(buyer.id);
      expect(others).toEqual([]);
      if (told === 'unavailable') {
        expect(charged).toEqual([]);
        expect(purchase).toMatchObject({ state: 'declined', declineReason: 'never-sent' });
      } else {
        expect(charged.map((charge) => charge.order)).toEqual([purchase!.orderId]);
        expect(purchase).toMatchObject({ state: 'credited' });
      }
      await expectLedger(buyer);
    });
  });

  describe('the settlement of a purchase whose provider answered late', () => {
    it.each(
      cases(
        SETTLEMENT_WRITES,
        FAULTS.filter((fault) => fault.data?.closeConnection === undefined),
      ),
    )('$label', async ({ write, fault }) => {
      const buyer = await newBuyer();
      // The provider charges the order but its answers are lost: the buy cannot tell, and leaves the purchase pending.
      stub.setFaults({ loseNextPaymentAnswers: 2 });
      await buyAndExpect(buyer, 'rest', 'not-confirmed');
      stub.setFaults({});
      expect(await purchasesOf(buyer.id)).toMatchObject([{ state: 'pending' }]);

      const lostBefore = faults.proxy.lostReplies().length;
      inject(write, fault);
      await clock.advance(0);
      await expectInjected(fault, lostBefore);
      await sweep();
      expect(await purchasesOf(buyer.id)).toMatchObject([{ state: 'credited' }]);
      expect(chargedTo(buyer.username)).toHaveLength(1);
      await expectLedger(buyer);
    });
  });

  describe('a gift grant', () => {
    it.each(cases(GIFT_WRITES))('$label', async ({ write, fault }) => {
      const buyer = await newBuyer();
      const lostBefore = faults.proxy.lostReplies().length;
      inject(write, fault);
      const first = await rest(gateway, buyer.authorization, '/package');
      await expectInjected(fault, lostBefore);
      if (fault.outcome === 'retried') {
        expect(first).toMatchObject({ status: 200, text: GIFT_PACKAGE });
      } else {
        // The request could not tell what was written: it answers 503, and the next one completes the grant.
        expect(first).toMatchObject(unavailableAnswer('error'));
        const again = await graphql(gateway, '{ giftPackage { cert teenager } }', { authorization: buyer.authorization });
        expect(again).toMatchObject({ status: 200, body: { data: { giftPackage: { cert: true, teenager: false } } } });
      }
      expect(
        await faults.db
          .collection('giftGrants')
          .find({ userId: buyer.id }, { projection: { _id: 0, gift: 1, credited: 1 } })
          .toArray(),
      ).toEqual([{ gift: 'cert', credited: true }]);
      expect((await user(buyer.id))?.grantedGifts).toEqual(['cert']);
      await expectLedger(buyer, 50);
    });
  });

  describe('an idempotency key', () => {
    it.each(['rest', 'graphql'] as const)(
      'claimed by a purchase whose reply was lost stands for it: sent again over %s, nothing more is bought',
      async (door) => {
        const buyer = await newBuyer();
        faults.proxy.loseReplies(inserts('purchases'));
        await buyAndExpect(buyer, door, 'success', 'key-lost-reply');
        await buyAndExpect(buyer, door, 'success', 'key-lost-reply');
        expect(faults.proxy.lostReplies().at(-1)).toMatchObject({ insert: 'purchases', documents: [{ idempotencyKey: 'key-lost-reply' }] });
        expect(await purchasesOf(buyer.id)).toMatchObject([{ state: 'credited', idempotencyKey: 'key-lost-reply' }]);
        await expectLedger(buyer);
        expect(chargedTo(buyer.username)).toHaveLength(1);
      },
    );

    it.each(['rest', 'graphql'] as const)(
      'of a buy stopped by a write of unknown outcome before its order was sent is free again at once, over %s',
      async (door) => {
        const buyer = await newBuyer();
        inject(BUY_WRITES[0]!, FAULTS.at(-1)!);
        await buyAndExpect(buyer, door, 'unavailable', 'key-unknown');
        expect((await faults.off()).failCommand).toBe(1);
        // Letting the key go loses its reply too: the release is retried, and applied once.
        faults.proxy.loseReplies(releasesKey);
        await buyAndExpect(buyer, door, 'success', 'key-unknown');
        expect(faults.proxy.lostReplies().at(-1)).toMatchObject({ update: 'purchases' });
        // Both opened at the same moment of the hand-moved clock: in the order of their states.
        const [credited, declined] = (await purchasesOf(buyer.id)).sort((a, b) => String(a.state).localeCompare(String(b.state)));
        expect(declined).toMatchObject({ state: 'declined', declineReason: 'never-sent' });
        expect(declined).not.toHaveProperty('idempotencyKey');
        expect(credited).toMatchObject({ state: 'credited', idempotencyKey: 'key-unknown' });
        expect(chargedTo(buyer.username).map((charge) => charge.order)).toEqual([credited!.orderId]);
        await expectLedger(buyer);
      },
    );
  });

  it("leaves every buyer's balance equal to the seed plus what the provider took, plus the gifts, to the micro-point", async () => {
    for (const person of people) {
      const record = await user(person.id);
      const giftPoints = ((record?.grantedGifts as string[] | undefined) ?? []).length * 50;
      await expectLedger(person, giftPoints);
    }
    expect(people.length).toBeGreaterThan(0);
  });
});
