import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { SsoStub } from '../../src/sso-stub/stub-server.js';
import { ManualClock } from '../support/clock.js';
import { runCommand } from '../support/command.js';
import type { TestGateway } from '../support/gateway.js';
import { buy, NOT_CONFIRMED, NOT_ENOUGH_MONEY, purchasesOf, quotaOf, SSO_SECRET, startOfficialGateway, startStub } from './official.js';

/** `npm run purchases` as built, with exactly the given environment (plus PATH). */
const purchases = (args: string[], env: Record<string, string> = {}) => runCommand('purchases', args, env);

const HOUR = 3_600_000;

let stub: SsoStub;
let gateway: TestGateway;
/** Two hours behind, so that after the test moves it two hours on, the command's own clock agrees with it. */
const clock = new ManualClock(Date.now() - 2 * HOUR);
let database: { MONGODB_URI: string };
let sso: Record<string, string>;

beforeAll(async () => {
  stub = await startStub({ ann: { wallet: 100 }, bo: { wallet: 100 }, cy: { wallet: 1 } });
  gateway = await startOfficialGateway(stub, { SETTLEMENT_HORIZON: '1h', SSO_ATTEMPTS: '1' }, { clock });
  await gateway.seed({
    users: [
      { id: 1, username: 'ann', quota: 0 },
      { id: 2, username: 'bo', quota: 0 },
      { id: 3, username: 'cy', quota: 0 },
    ],
  });
  database = { MONGODB_URI: gateway.testDatabase.uri };
  sso = { SSO_URL: stub.url, SSO_SECRET };
});

afterAll(async () => {
  await gateway?.stop();
  await stub?.close();
});

function lines(text: string): string[] {
  return text.trimEnd().split('\n');
}

describe('npm run purchases', () => {
  it('answers --help with its usage and exit code 0', async () => {
    const { code, stdout, stderr } = await purchases(['--help']);

    expect(code).toBe(0);
    expect(stdout).toMatch(/^Usage: npm run purchases -- --pending \[--user ID\]/);
    expect(stdout).toMatch(/--recheck ORDER/);
    expect(stderr).toBe('');
  });

  it.each([
    [[], /give exactly one of --pending, --review, --recheck ORDER or --close ORDER/],
    [['--recheck', 'o', '--close', 'o'], /give exactly one of/],
    [['--close', 'o', '--user', '1'], /--user goes with --pending or --review, not --close/],
    [['--pending', '--review'], /give exactly one of/],
    [['--pending', '--user', 'x'], /--user must be a user id/],
    [['--pending', '--user', '0'], /--user must be a user id/],
    [['--recheck', 'o', '--user', '1'], /--user goes with --pending or --review/],
    [['--pending', '--verbose'], /Unknown option '--verbose'/],
    [['--recheck'], /--recheck.*argument missing/],
  ])('refuses %j in one line with exit code 2', async (args, message) => {
    const { code, stdout, stderr } = await purchases(args, database);

    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(lines(stderr)).toEqual([expect.stringMatching(message)]);
    expect(stderr).toMatch(/^purchases: /);
  });

  it('reports missing or wrong configuration in one line per problem with exit code 2, reading only what it needs', async () => {
    const missing = await purchases(['--pending']);
    expect(missing.code).toBe(2);
    expect(lines(missing.stderr)).toEqual(['purchases: MONGODB_URI is not set: give the database the gateways use (see --help)']);

    const wrong = await purchases(['--pending'], { MONGODB_URI: 'localhost:27017' });
    expect(wrong.code).toBe(2);
    expect(lines(wrong.stderr)).toEqual(['purchases: MONGODB_URI must start with mongodb:// or mongodb+srv://']);

    const noProvider = await purchases(['--recheck', 'some-order'], { ...database, SSO_TIMEOUT_MS: 'soon' });
    expect(noProvider.code).toBe(2);
    expect(lines(noProvider.stderr)).toEqual(['purchases: SSO_TIMEOUT_MS must be a whole number from 1 to 600000']);

    // Variables the command does not read may be anything.
    const listed = await purchases(['--pending'], { ...database, PORT: 'eighty', JWT_SECRET: 'short', DEPLOYMENT: 'official' });
    expect(listed).toMatchObject({ code: 0, stderr: '' });
  });

  it('fails in one line with exit code 1 when the database cannot be reached', async () => {
    const { code, stderr } = await purchases(['--pending'], { MONGODB_URI: 'mongodb://127.0.0.1:9/nothing-here' });

    expect(code).toBe(1);
    expect(lines(stderr)).toEqual([expect.stringMatching(/^purchases: cannot reach the database: /)]);
  });

  it('lists unsettled purchases with order id, user, amount, state and age, all or one user’s, and those needing review', async () => {
    expect((await purchases(['--pending'], database)).stdout).toBe('no unsettled purchases\n');
    stub.setFaults({ down: true });
    expect(await buy(gateway, await gateway.token(1), 125)).toEqual({ status: 200, text: NOT_CONFIRMED });
    await clock.advance(2 * HOUR); // ann's order is past the horizon
    expect(await buy(gateway, await gateway.token(2), 70)).toEqual({ status: 200, text: NOT_CONFIRMED });
    await clock.advance(0);
    const [ann] = await purchasesOf(gateway, 1);
    const [bo] = await purchasesOf(gateway, 2);

    const all = await purchases(['--pending'], database);
    expect(all.code).toBe(0);
    expect(lines(all.stdout)).toEqual([
      expect.stringMatching(/^ORDER +USER +AMOUNT +POINTS +STATE +AGE +CHECKS +LAST CHECK$/),
      expect.stringMatching(
        new RegExp(`^${ann!.orderId} +1 +12\\.5 +125 +pending, review +2h0\\dm +\\d+ +SSO provider unavailable: .* answered HTTP 503`),
      ),
      expect.stringMatching(new RegExp(`^${bo!.orderId} +2 +7 +70 +pending +\\d+s +1 +SSO provider unavailable: `)),
      '2 unsettled purchases',
    ]);
    const onlyBo = await purchases(['--pending', '--user', '2'], database);
    expect(lines(onlyBo.stdout).slice(1)).toEqual([expect.stringContaining(bo!.orderId), '1 unsettled purchase']);
    const review = await purchases(['--review'], database);
    expect(lines(review.stdout).slice(1)).toEqual([expect.stringContaining(ann!.orderId), '1 purchase needing review']);
    expect((await purchases(['--review', '--user', '2'], database)).stdout).toBe('no purchases needing review\n');
  });

  it('rechecks an order once and settles it: credits a charged one, keeps an unknown one, credits a declined one found paid later', async () => {
    const [ann] = await purchasesOf(gateway, 1);
    const [bo] = await purchasesOf(gateway, 2);
    stub.setFaults({});
    // The provider acts on ann's order at last (a worker that had stalled); bo's never reached it.
    await fetch(`${stub.url}/app/payment`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SSO_SECRET}`, 'content-type': 'application/json' },
      body: JSON.stringify({ user: 'ann', order: ann!.orderId, amount: ann!.amount }),
    });

    const charged = await purchases(['--recheck', ann!.orderId], { ...database, ...sso });
    expect(charged).toMatchObject({ code: 0, stderr: '' });
    expect(charged.stdout).toBe(`order ${ann!.orderId}: the provider says paid; pending → credited\n`);
    expect(await quotaOf(gateway, await gateway.token(1))).toBe(125);

    const unknown = await purchases(['--recheck', bo!.orderId], { ...database, ...sso });
    expect(unknown.stdout).toBe(`order ${bo!.orderId}: the provider says unknown; still pending\n`);

    expect(await buy(gateway, await gateway.token(3), 20)).toEqual({ status: 200, text: NOT_ENOUGH_MONEY });
    const [cy] = await purchasesOf(gateway, 3);
    stub.setUser('cy', { wallet: 5 });
    stub.changeMind(cy!.orderId);
    for (const round of [1, 2]) {
      const late = await purchases(['--recheck', cy!.orderId], { ...database, ...sso });
      expect(late.stdout).toBe(`order ${cy!.orderId}: the provider says paid; ${round === 1 ? 'declined → credited' : 'still credited'}\n`);
    }
    expect(await quotaOf(gateway, await gateway.token(3))).toBe(20);
    expect((await purchasesOf(gateway, 3))[0]).toMatchObject({ state: 'credited', creditedLate: true });
  });

  it('closes an order the provider never received, which a later recheck still credits should the provider charge it', async () => {
    const [bo] = await purchasesOf(gateway, 2);
    const closed = await purchases(['--close', bo!.orderId], { ...database, ...sso });
    expect(closed).toMatchObject({ code: 0, stderr: '' });
    expect(closed.stdout).toBe(`order ${bo!.orderId}: the provider says unknown; pending → declined\n`);
    expect((await purchasesOf(gateway, 2))[0]).toMatchObject({ state: 'declined', declineReason: 'closed-by-operator' });
    expect((await purchases(['--pending', '--user', '2'], database)).stdout).toBe('no unsettled purchases\n');
    expect(await quotaOf(gateway, await gateway.token(2))).toBe(0);

    // The order reaches the provider after all (a request stuck in a queue): the points follow the money.
    await fetch(`${stub.url}/app/payment`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SSO_SECRET}`, 'content-type': 'application/json' },
      body: JSON.stringify({ user: 'bo', order: bo!.orderId, amount: bo!.amount }),
    });
    const again = await purchases(['--close', bo!.orderId], { ...database, ...sso });
    expect(again.stdout).toBe(`order ${bo!.orderId}: the provider says paid; declined → credited\n`);
    expect(await quotaOf(gateway, await gateway.token(2))).toBe(70);
    expect((await purchases(['--close', bo!.orderId], { ...database, ...sso })).stdout).toBe(
      `order ${bo!.orderId}: the provider says paid; still credited\n`,
    );
    expect(await quotaOf(gateway, await gateway.token(2))).toBe(70);
  });

  it('fails in one line with exit code 1 for an unknown order or a provider that refuses the secret', async () => {
    const unknown = await purchases(['--recheck', 'no-such-order'], { ...database, ...sso });
    expect(unknown.code).toBe(1);
    expect(lines(unknown.stderr)).toEqual(['purchases: no purchase has order id no-such-order']);

    stub.setFaults({ down: true });
    expect(await buy(gateway, await gateway.token(2), 30)).toEqual({ status: 200, text: NOT_CONFIRMED });
    stub.setFaults({});
    const pending = (await purchasesOf(gateway, 2)).find((purchase) => purchase.state === 'pending');
    for (const mode of ['--recheck', '--close']) {
      const refused = await purchases([mode, pending!.orderId], { ...database, SSO_URL: stub.url, SSO_SECRET: 'not-the-secret' });
      expect(refused.code).toBe(1);
      expect(lines(refused.stderr)).toEqual(['purchases: SSO provider unavailable: POST /app/payment/status answered HTTP 401']);
      expect((await purchasesOf(gateway, 2)).find((purchase) => purchase.orderId === pending!.orderId)).toMatchObject({
        state: 'pending',
        lastCheck: expect.stringMatching(/HTTP 401/),
      });
    }
  });
});
