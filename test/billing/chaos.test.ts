import { setTimeout as sleep } from 'node:timers/promises';

import type { Document } from 'mongodb';
import { afterAll, describe, expect, it } from 'vitest';

import { createAccounts } from '../../src/accounts/index.js';
import { microsToPoints, pointsToMicros } from '../../src/accounts/points.js';
import type { UserModel } from '../../src/accounts/user.model.js';
import { secretKey, signAccessToken } from '../../src/auth/access-token.js';
import { type Gift, GIFT_POINTS, GIFTS } from '../../src/billing/gift.js';
import { type GiftGrantModel, giftGrantModel } from '../../src/billing/gift-grant.model.js';
import { type PurchaseModel, purchaseModel, type PurchaseRecord } from '../../src/billing/purchase.model.js';
import { createConversations } from '../../src/conversations/index.js';
import { connectDatabase } from '../../src/db/database.js';
import { withDatabaseName } from '../../src/db/uri.js';
import { createLogger } from '../../src/logger.js';
import { loadSeed } from '../../src/seed/seed-file.js';
import { type SsoStub, type SsoStubCharge, type SsoStubFaults, startSsoStub } from '../../src/sso-stub/stub-server.js';
import { runCommand } from '../support/command.js';
import { type EmbeddedDbProcess, startEmbeddedDbProcess } from '../support/embedded-db-process.js';
import { type FailPointMode, type FaultDatabase, startFaultDatabase } from '../support/fail-points.js';
import { TEST_JWT_SECRET } from '../support/gateway.js';
import { type NodeProcess, spawnNode } from '../support/node-process.js';
import { seededRandom } from '../support/random.js';
import { connectAs } from '../support/websocket.js';
import { eventually, NOT_CONFIRMED, NOT_ENOUGH_MONEY, officialProcessEnvironment, SSO_SECRET, SUCCESS } from './official.js';

/**
 * Two gateway processes on one embedded-db process, in front of a provider that goes down, loses
 * answers, answers late and stalls (acts on payments 10–20 s after receiving them, answering
 * `unknown` meanwhile), while gateways are SIGKILLed and restarted under hundreds of buys, valid
 * and not, and gift claims, and while the database fails under them as MongoDB does in an
 * election or a failover (MongoDB's `failCommand` fail point on the gateways' writes and change
 * stream reads, at random: retryable errors, closed connections, write concern errors, bursts of
 * a step-down; and replies lost after a write was applied). Balance subscribers follow along over
 * WebSocket. Once all heals, every user's balance must be exactly the seed, plus 10 points per
 * unit of money the provider took, plus the gifts credited, and every subscriber must show it.
 * Half the buys carry an idempotency key, and their clients send them again with the same key
 * when cut off (a killed gateway, or their own patience running out): no intent to buy is ever
 * charged twice. No answer is a 500.
 *
 * The suite runs one fixed seed; CHAOS_SEED=<n> runs another (CHAOS_SEED=random picks one, and
 * prints it). The schedule of requests, faults and kills follows from the seed (the interleavings
 * of real processes do not).
 */
const DEFAULT_SEED = 101;
const SEED = process.env.CHAOS_SEED === 'random' ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.CHAOS_SEED ?? DEFAULT_SEED);
const TRAFFIC_MS = 30_000;
/** No stall starts later than this before the end of the traffic, so that healing stays short. */
const LAST_STALL_BEFORE_END_MS = 12_000;
const CLIENTS = 6;
const USERS = 10;
const UNKNOWN_ANSWER = 'the provider answered unknown';
/** Never bought validly: its string form is one of the invalid bodies, and must never reach the provider. */
const RESERVED_QUOTA = 77;
const INVALID_BUYS: { body: string; idempotencyKey?: string }[] = [
  ...[
    '{"quota":0}',
    '{"quota":-5}',
    '{"quota":100000}',
    '{"quota":1.5}',
    `{"quota":"${RESERVED_QUOTA}"}`,
    '{"quota":null}',
    '{}',
    'not json',
  ].map((body) => ({ body })),
  ...['', 'not a key', 'x'.repeat(256)].map((idempotencyKey) => ({ body: `{"quota":${RESERVED_QUOTA}}`, idempotencyKey })),
];
/** The share of valid buys sent with an idempotency key; a cut-off one is sent again with it, up to KEYED_RETRIES times. */
const KEYED_SHARE = 0.5;
const KEYED_RETRIES = 3;
/** The share of keyed buys whose client gives up on the first attempt after 150–700 ms, while the gateway may still be at work. */
const IMPATIENT_SHARE = 0.4;
/** How long a client waits for an answer otherwise. */
const PATIENCE_MS = 15_000;

/** Users whose balance a subscriber follows over WebSocket (reconnecting to a gateway that is up when cut off). */
const SUBSCRIBED_USERS = 4;
/** How likely a write (or a change stream's getMore) of a gateway is to fail during an episode of database faults. */
const FAULT_PROBABILITY = 0.1;

/** Short enough for the test to heal quickly, as an operator might set them for a fast provider. */
const SETTLEMENT_ENVIRONMENT = {
  SSO_TIMEOUT_MS: '400',
  SSO_ATTEMPTS: '2',
  SETTLEMENT_INTERVAL_MS: '500',
  SETTLEMENT_BACKOFF_MAX_MS: '1000',
  SETTLEMENT_HORIZON: '8s',
};

interface Person {
  id: number;
  username: string;
  seedPoints: number;
  token: string;
  /** Valid quotas asked for, each once. */
  quotas: Set<number>;
  /** Gifts whose flag was true at some point. */
  everQualified: Set<Gift>;
}

type Answer = { kind: 'answered'; status: number; text: string } | { kind: 'cut-off' };

/** One intent to buy: a person's quota, asked for once; with a key, attempted until answered or out of retries. */
interface ValidBuy {
  person: Person;
  quota: number;
  idempotencyKey: string | undefined;
  /** Every attempt's answer, in order; the last is what the client was finally told. */
  answers: Answer[];
  impatient: boolean;
}

interface Tally {
  validBuys: ValidBuy[];
  invalidBuys: { body: string; idempotencyKey?: string; answer: Answer }[];
  /** The answers of gift claims and balance reads. */
  otherAnswers: Answer[];
  giftClaims: number;
  balanceReads: number;
  /** Database faults injected, by kind: how many commands each hit. */
  databaseFaults: Map<string, number>;
  /** Balance values each subscription showed, one list per subscription (a cut-off subscriber subscribes again). */
  subscriberValues: Map<number, number[][]>;
  kills: number;
  stallEpisodes: number;
  stalledPayments: number;
  pendingDuringStall: string;
}

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

/** A gateway process that the test kills and starts again; its output is kept across lives. */
class GatewayProcess {
  url: string | undefined;
  private current: NodeProcess | undefined;
  private readonly output: string[] = [];

  constructor(private readonly environment: Record<string, string>) {}

  async start(): Promise<void> {
    const process = spawnNode('dist/main.js', [], this.environment);
    this.current = process;
    const [, url] = await process.waitFor(/listening on (http:\/\/[\d.:]+)/, { timeoutMs: 30_000, stream: 'stderr' });
    this.url = url;
  }

  async kill(signal: NodeJS.Signals): Promise<void> {
    const process = this.current;
    if (process === undefined) return;
    this.url = undefined;
    this.current = undefined;
    process.child.kill(signal);
    await process.exited;
    this.output.push(process.stdout());
  }

  /** Every line logged at `level` (pino's number) over all its lives. */
  logLines(level: number): Record<string, unknown>[] {
    return [...this.output, this.current?.stdout() ?? '']
      .join('\n')
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.level === level);
  }
}

async function request(
  url: string | undefined,
  token: string,
  path: '/buy' | '/package' | '/quota',
  body?: string,
  { idempotencyKey, timeoutMs = PATIENCE_MS }: { idempotencyKey?: string | undefined; timeoutMs?: number } = {},
): Promise<Answer> {
  if (url === undefined) return { kind: 'cut-off' };
  try {
    const response = await fetch(`${url}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: {
        authorization: token,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey }),
      },
      body,
      signal: AbortSignal.timeout(timeoutMs),
    });
    return { kind: 'answered', status: response.status, text: await response.text() };
  } catch {
    return { kind: 'cut-off' };
  }
}

describe('purchases under chaos', () => {
  it(`credit exactly what the provider charged, with the provider failing in every way and gateways killed (seed ${SEED})`, async () => {
    const started = performance.now();
    try {
      // One stream of random numbers per actor, so that each one's decisions follow from the seed alone.
      const world = await startWorld(seededRandom(SEED));
      const followers = followBalances(world, seededRandom(SEED + 107));
      cleanups.push(() => followers.stop());
      const trafficStarts = performance.now();
      const tally = await runTraffic(world);
      const trafficDone = performance.now();
      await heal(world);
      await followersConverged(world, followers);
      await followers.stop();
      const healed = performance.now();
      const figures = [...(await verify(world, tally)), verifyFollowers(followers)];
      const seconds = (ms: number) => (ms / 1000).toFixed(1);
      console.info(
        [
          ...figures,
          `  set-up ${seconds(trafficStarts - started)} s, traffic ${seconds(trafficDone - trafficStarts)} s, ` +
            `healed after ${seconds(healed - trafficDone)} s, total ${seconds(performance.now() - started)} s`,
          '  npm run purchases -- --pending during the first stall:',
          ...tally.pendingDuringStall
            .trimEnd()
            .split('\n')
            .map((line) => `    ${line}`),
        ].join('\n'),
      );
    } catch (error) {
      if (error instanceof Error) error.message = `[replay with CHAOS_SEED=${SEED}] ${error.message}`;
      throw error;
    }
  }, 150_000);
});

/** A whole number from `low` to `high`, drawn from `stream`. */
function between(stream: () => number, low: number, high: number): number {
  return low + Math.floor(stream() * (high - low + 1));
}

interface World {
  stub: SsoStub;
  /** The database's fail points and the proxy in front of it, through which the gateways connect. */
  faults: FaultDatabase;
  people: Person[];
  /** Money in each wallet before the first request. */
  walletsAtStart: Map<string, number>;
  databaseUri: string;
  /** On the test's own connection, to read what the gateways wrote. */
  models: { users: UserModel; purchases: PurchaseModel; giftGrants: GiftGrantModel };
  gateways: GatewayProcess[];
  /** Sets a user's flags at the provider, remembering which gifts the user ever qualified for. */
  setFlags(person: Person, flags: Partial<Record<Gift, boolean>>): void;
  /** The URL of a gateway that is up, picked by `stream`. */
  anyGateway(stream: () => number): string | undefined;
}

/** The provider with the people's wallets and flags, one database process, seeded, and two gateways on it. */
async function startWorld(setup: () => number): Promise<World> {
  const key = secretKey(TEST_JWT_SECRET);
  const people: Person[] = [];
  for (let id = 1; id <= USERS; id += 1) {
    people.push({
      id,
      username: `user${id}`,
      seedPoints: between(setup, 0, 1_000_000) / 10_000,
      token: await signAccessToken(key, id),
      quotas: new Set(),
      everQualified: new Set(),
    });
  }
  const stub = await startSsoStub({ secret: SSO_SECRET });
  cleanups.push(() => stub.close());
  const setFlags = (person: Person, flags: Partial<Record<Gift, boolean>>) => {
    stub.setUser(person.username, flags);
    for (const gift of GIFTS) if (flags[gift]) person.everQualified.add(gift);
  };
  for (const person of people) {
    // A few nearly empty wallets, so that "not enough money" happens often too.
    stub.setUser(person.username, { wallet: person.id % 4 === 0 ? between(setup, 0, 300) / 100 : between(setup, 50_000, 150_000) / 100 });
    setFlags(person, { cert: setup() < 0.3, teenager: setup() < 0.2 });
  }

  const engine: EmbeddedDbProcess = await startEmbeddedDbProcess({ enableTestCommands: true });
  const databaseUri = withDatabaseName(engine.uri, 'chaos');
  const faults = await startFaultDatabase({ database: { uri: databaseUri, dbName: 'chaos', stop: () => engine.stop() } });
  cleanups.push(() => faults.stop());
  const database = await connectDatabase(databaseUri);
  cleanups.push(() => database.close());
  const accounts = createAccounts(database);
  await loadSeed(
    { accounts, conversations: createConversations(database, createLogger({ logLevel: 'silent' })) },
    { users: people.map(({ id, username, seedPoints }) => ({ id, username, quota: seedPoints })) },
  );
  const gateways = [0, 1].map(() => new GatewayProcess(officialProcessEnvironment(stub, faults.gatewayUri, SETTLEMENT_ENVIRONMENT)));
  cleanups.push(() => Promise.all(gateways.map((gateway) => gateway.kill('SIGKILL'))));
  await Promise.all(gateways.map((gateway) => gateway.start()));

  return {
    stub,
    faults,
    people,
    walletsAtStart: new Map(people.map((person) => [person.username, stub.wallet(person.username)])),
    databaseUri,
    models: {
      users: accounts.models.users,
      purchases: purchaseModel(database.connection),
      giftGrants: giftGrantModel(database.connection),
    },
    gateways,
    setFlags,
    anyGateway(stream) {
      const up = gateways.filter((gateway) => gateway.url !== undefined);
      return up[Math.floor(stream() * up.length)]?.url;
    },
  };
}

/** TRAFFIC_MS of clients, a provider changing moods, and gateways killed and started again, all at once. */
async function runTraffic(world: World): Promise<Tally> {
  const { stub, people, gateways } = world;
  const tally: Tally = {
    validBuys: [],
    invalidBuys: [],
    otherAnswers: [],
    giftClaims: 0,
    balanceReads: 0,
    databaseFaults: new Map(),
    subscriberValues: new Map(),
    kills: 0,
    stallEpisodes: 0,
    stalledPayments: 0,
    pendingDuringStall: '',
  };
  const trafficEnds = performance.now() + TRAFFIC_MS;
  const running = () => performance.now() < trafficEnds;
  /** Waits `ms`, or less when the traffic ends sooner. */
  const pause = (ms: number) => sleep(Math.max(0, Math.min(ms, trafficEnds - performance.now())));

  // One intent to buy; with a key, sent again with it after a cut-off, to whichever gateway is up then.
  const buyValidly = async (person: Person, quota: number, url: string | undefined, stream: () => number) => {
    const idempotencyKey = stream() < KEYED_SHARE ? `${person.username}/${quota}` : undefined;
    const impatient = idempotencyKey !== undefined && stream() < IMPATIENT_SHARE;
    const buy: ValidBuy = { person, quota, idempotencyKey, answers: [], impatient };
    tally.validBuys.push(buy);
    let timeoutMs = impatient ? between(stream, 150, 700) : PATIENCE_MS;
    for (let target = url; ; target = world.anyGateway(stream)) {
      const answer = await request(target, person.token, '/buy', JSON.stringify({ quota }), { idempotencyKey, timeoutMs });
      buy.answers.push(answer);
      if (idempotencyKey === undefined || answer.kind === 'answered' || buy.answers.length > KEYED_RETRIES || !running()) return;
      await sleep(between(stream, 50, 300));
      timeoutMs = PATIENCE_MS;
    }
  };

  // Buys valid and not, gift claims and balance reads, against whichever gateway is up.
  const client = async (stream: () => number) => {
    while (running()) {
      const person = people[Math.floor(stream() * people.length)]!;
      const roll = stream();
      const url = world.anyGateway(stream);
      if (roll < 0.55) {
        let quota: number;
        do quota = 1 + Math.floor(stream() * 400);
        while (quota === RESERVED_QUOTA || person.quotas.has(quota));
        person.quotas.add(quota);
        await buyValidly(person, quota, url, stream);
      } else if (roll < 0.7) {
        const invalid = INVALID_BUYS[Math.floor(stream() * INVALID_BUYS.length)]!;
        tally.invalidBuys.push({ ...invalid, answer: await request(url, person.token, '/buy', invalid.body, invalid) });
      } else if (roll < 0.85) {
        tally.giftClaims += 1;
        tally.otherAnswers.push(await request(url, person.token, '/package'));
      } else {
        tally.balanceReads += 1;
        tally.otherAnswers.push(await request(url, person.token, '/quota'));
      }
      await sleep(20 + Math.floor(stream() * 60));
    }
  };

  // The provider's moods, one episode after another; the first one is a stall.
  const provider = async (stream: () => number, stallLengths: () => number) => {
    for (let episode = 0; running(); episode += 1) {
      const roll = episode === 0 ? 1 : stream();
      let faults: SsoStubFaults = {};
      if (roll < 0.35) faults = {};
      else if (roll < 0.5) faults = { down: true };
      else if (roll < 0.65) faults = { loseNextPaymentAnswers: between(stream, 1, 4) };
      else if (roll < 0.8) faults = { delayMs: between(stream, 450, 900) };
      else if (trafficEnds - performance.now() > LAST_STALL_BEFORE_END_MS) {
        tally.stallEpisodes += 1;
        faults = {
          stallMs: () => {
            tally.stalledPayments += 1;
            return between(stallLengths, 10_000, 20_000);
          },
        };
      }
      stub.setFaults(faults);
      if (stream() < 0.3) {
        const person = people[Math.floor(stream() * people.length)]!;
        world.setFlags(person, { [stream() < 0.6 ? 'cert' : 'teenager']: stream() < 0.7 });
      }
      if (episode === 0) {
        await sleep(2_500);
        tally.pendingDuringStall = await listPending(world.databaseUri);
      }
      await pause(between(stream, 1_500, 3_000));
    }
    stub.setFaults({});
  };

  // Gateways killed without warning, and started again.
  const killer = async (stream: () => number) => {
    await pause(between(stream, 2_000, 4_000));
    while (running()) {
      const victim = gateways[Math.floor(stream() * gateways.length)]!;
      await victim.kill('SIGKILL');
      tally.kills += 1;
      await sleep(between(stream, 300, 1_500));
      await victim.start();
      await pause(between(stream, 2_500, 5_000));
    }
  };

  await Promise.all([
    ...Array.from({ length: CLIENTS }, (_, index) => client(seededRandom(SEED + index + 1))),
    provider(seededRandom(SEED + 101), seededRandom(SEED + 102)),
    killer(seededRandom(SEED + 103)),
    databaseFaults(world, tally, { running, pause }, seededRandom(SEED + 105), seededRandom(SEED + 106)),
  ]);
  return tally;
}

const WRITES = ['insert', 'update', 'findAndModify', 'delete'];
/** Every command the gateways send to serve requests and subscriptions (not those of their start). */
const SERVING = [...WRITES, 'find', 'aggregate', 'getMore', 'count'];
const WRITE_CONCERN_ERRORS = [
  // Retryable: the driver retries, and the retry is answered from the server's record of the write.
  { code: 91, codeName: 'ShutdownInProgress', errmsg: 'Replication is being shut down' },
  // A timeout the driver does not retry: the write is applied, and its outcome unknown to the gateway.
  { code: 64, codeName: 'WriteConcernFailed', errmsg: 'waiting for replication timed out', errInfo: { wtimeout: true } },
];

/** One of `choices`, drawn from `stream`. */
function pick<T>(stream: () => number, choices: readonly T[]): T {
  return choices[Math.floor(stream() * choices.length)]!;
}

/**
 * The database's moods, one episode after another: calm, or MongoDB's `failCommand` on a share of
 * the gateways' writes or change stream reads (as an election or a failover brings them), replies
 * lost after a write was applied, or a step-down: every command failing for a moment. `losses`
 * decides which writes lose their replies.
 */
async function databaseFaults(
  { faults }: World,
  tally: Tally,
  { running, pause }: { running: () => boolean; pause: (ms: number) => Promise<void> },
  stream: () => number,
  losses: () => number,
): Promise<void> {
  const some: FailPointMode = { activationProbability: FAULT_PROBABILITY };
  const isWrite = (command: Document) => WRITES.includes(Object.keys(command)[0] ?? '');
  const episodes: { kind: string; start: () => Promise<unknown>; lastsMs: [number, number] }[] = [
    {
      kind: 'writes failing with 10107, 11602 or 91 (RetryableWriteError)',
      start: () => faults.failCommand(some, { failCommands: WRITES, errorCode: pick(stream, [10107, 11602, 91]) }),
      lastsMs: [1_500, 3_000],
    },
    {
      kind: 'connections closed before a write',
      start: () => faults.failCommand(some, { failCommands: WRITES, closeConnection: true }),
      lastsMs: [1_500, 3_000],
    },
    {
      kind: 'write concern errors after a write (91 retried, 64 unknown)',
      start: () => faults.failCommand(some, { failCommands: WRITES, writeConcernError: pick(stream, WRITE_CONCERN_ERRORS) }),
      lastsMs: [1_500, 3_000],
    },
    {
      kind: 'replies lost after a write',
      start: async () => faults.proxy.loseReplies((command) => isWrite(command) && losses() < FAULT_PROBABILITY, Number.MAX_SAFE_INTEGER),
      lastsMs: [1_500, 3_000],
    },
    {
      kind: 'reads failing with 89, 262 or 9001 (timeouts and network errors between members)',
      start: () =>
        faults.failCommand(
          { activationProbability: 3 * FAULT_PROBABILITY },
          { failCommands: ['find'], errorCode: pick(stream, [89, 262, 9001]) },
        ),
      lastsMs: [1_500, 3_000],
    },
    {
      kind: 'change stream getMores failing (resumable)',
      start: () =>
        faults.failCommand(
          { activationProbability: 5 * FAULT_PROBABILITY },
          pick(stream, [
            { failCommands: ['getMore'], closeConnection: true },
            { failCommands: ['getMore'], errorCode: 10107, errorLabels: ['ResumableChangeStreamError'] },
          ]),
        ),
      lastsMs: [1_500, 3_000],
    },
    {
      kind: 'step-downs (every command failing with 10107 or 11602)',
      start: () => faults.failCommand('alwaysOn', { failCommands: SERVING, errorCode: pick(stream, [10107, 11602]) }),
      lastsMs: [300, 900],
    },
  ];
  await pause(between(stream, 1_000, 2_000));
  while (running()) {
    if (stream() < 0.25) {
      await pause(between(stream, 1_000, 2_000));
      continue;
    }
    const episode = pick(stream, episodes);
    const lostBefore = faults.proxy.lostReplies().length;
    await episode.start();
    await pause(between(stream, ...episode.lastsMs));
    const fired = await faults.off();
    const hits = fired.failCommand + faults.proxy.lostReplies().length - lostBefore;
    tally.databaseFaults.set(episode.kind, (tally.databaseFaults.get(episode.kind) ?? 0) + hits);
    await pause(between(stream, 200, 1_000));
  }
  await faults.off();
}

/**
 * The provider works again and has acted on every payment it holds; every purchase it knows of is
 * settled. Orders it never got (it was down, or the buy was killed before sending) stay open: their
 * fate is unknown, and the gateway's clock never closes them; each was asked about since its buy ended.
 */
async function heal(world: World): Promise<void> {
  const { stub, gateways, people } = world;
  await world.faults.off();
  stub.setFaults({});
  await Promise.all(gateways.filter((gateway) => gateway.url === undefined).map((gateway) => gateway.start()));
  await eventually(async () => (stub.stalled() === 0 ? true : undefined), 25_000, 'the stalled payments to be acted on');
  const unsettled = () =>
    world.models.purchases.find({ state: { $in: ['opened', 'pending', 'crediting'] } }, { _id: 0 }).lean<PurchaseRecord[]>();
  const open = (purchase: PurchaseRecord) =>
    purchase.state === 'pending' && purchase.lastCheck === UNKNOWN_ANSWER && stub.paymentState(purchase.orderId) === 'unknown';
  const settled = async () => ((await unsettled()).every(open) ? true : undefined);
  await eventually(settled, 20_000, 'every purchase the provider knows to be settled').catch(async (error: Error) => {
    const left = (await unsettled()).map((purchase) => ({ ...purchase, atProvider: stub.paymentState(purchase.orderId) }));
    throw new Error(`${error.message}; still unsettled: ${JSON.stringify(left)}`);
  });
  // Each user's next requests: a gift claim completes a claim a kill cut off, and a balance read
  // takes off the pending list an order a kill left there after its purchase was closed.
  const stream = seededRandom(SEED + 104);
  for (const person of people) {
    await request(world.anyGateway(stream), person.token, '/package');
    await request(world.anyGateway(stream), person.token, '/quota');
  }
}

/** Checks what the provider and the gateways did; answers the figures of the run. */
async function verify(world: World, tally: Tally): Promise<string[]> {
  const { stub, people, models, gateways } = world;
  // The gateways' sweeps go on meanwhile: review lines are read before the purchases, so that each
  // one's flag (written before its line) is in what is read.
  const reviewLogs = gateways.flatMap((gateway) => gateway.logLines(50)).filter((line) => /needs review/.test(String(line.msg)));
  const all = await models.purchases.find({}, { _id: 0 }).lean<PurchaseRecord[]>();

  // What the provider did: each order charged once, and only orders of valid, recorded buys.
  const charges = stub.charges();
  expect(new Set(charges.map((charge) => charge.order)).size, 'an order charged twice').toBe(charges.length);
  const byName = new Map(people.map((person) => [person.username, person]));
  const recorded = new Set(all.map((purchase) => purchase.orderId));
  for (const call of stub.calls.filter((call) => call.path === '/app/payment')) {
    const payment = call.body as { user: string; order: string; amount: number };
    expect(byName.get(payment.user)?.quotas.has(Math.round(payment.amount * 10)), `payment ${JSON.stringify(payment)}`).toBe(true);
    expect(recorded.has(payment.order), `payment ${JSON.stringify(payment)}`).toBe(true);
  }

  // What the gateways did: credited exactly the charged orders; open only orders the provider does not know.
  const intentFigures = verifyIntents(tally, all, charges);
  expect(all.filter((purchase) => purchase.state === 'opened' || purchase.state === 'crediting')).toEqual([]);
  const open = all.filter((purchase) => purchase.state === 'pending');
  expect(open.filter((purchase) => stub.paymentState(purchase.orderId) !== 'unknown')).toEqual([]);
  const credited = all.filter((purchase) => purchase.state === 'credited');
  const charged = new Map(charges.map((charge) => [charge.order, charge]));
  expect(credited.map((purchase) => purchase.orderId).toSorted(), 'credited orders are the charged ones').toEqual(
    [...charged.keys()].toSorted(),
  );
  for (const purchase of credited) {
    const { user, amount } = charged.get(purchase.orderId)!;
    expect({ user, amount }).toEqual({ user: purchase.username, amount: purchase.amount });
  }
  // Invalid buys were refused; those with a bad key, for their key.
  for (const { body, idempotencyKey, answer } of tally.invalidBuys) {
    if (answer.kind !== 'answered') continue;
    expect(JSON.parse(answer.text), `${body} ${idempotencyKey}`).toMatchObject({
      status: false,
      ...(idempotencyKey === undefined ? {} : { error: expect.stringMatching(/^invalid idempotency key/) }),
    });
  }

  // Every user's balance: the seed, 10 points per unit of money taken, and the gifts credited.
  const grants = await models.giftGrants.find({}, { _id: 0 }).lean();
  let chargedCentsInAll = 0;
  for (const person of people) {
    const user = await models.users.findOne({ id: person.id }).lean();
    const chargedCents = charges
      .filter((charge) => charge.user === person.username)
      .reduce((sum, charge) => sum + Math.round(charge.amount * 100), 0);
    chargedCentsInAll += chargedCents;
    const takenCents = Math.round((world.walletsAtStart.get(person.username)! - stub.wallet(person.username)) * 100);
    expect(takenCents, `money taken from ${person.username}`).toBe(chargedCents);
    const gifts = user?.grantedGifts ?? [];
    const giftPoints = gifts.reduce((sum, gift) => sum + GIFT_POINTS[gift], 0);
    // A cent of money buys a tenth of a point.
    const expected = pointsToMicros(person.seedPoints) + pointsToMicros(chargedCents / 10) + pointsToMicros(giftPoints);
    expect(user?.balanceMicros, `balance of ${person.username}`).toBe(expected);
    const awaiting = open.filter((purchase) => purchase.userId === person.id).map((purchase) => purchase.orderId);
    const listed = user?.pendingOrders ?? [];
    const odd = all.filter((purchase) => awaiting.includes(purchase.orderId) !== listed.includes(purchase.orderId));
    expect(listed.toSorted(), `orders awaiting credit for ${person.username}; odd ones: ${JSON.stringify(odd)}`).toEqual(
      awaiting.toSorted(),
    );
    for (const gift of gifts) expect(person.everQualified.has(gift), `${gift} for ${person.username}`).toBe(true);
    expect(
      grants
        .filter((grant) => grant.userId === person.id)
        .map((grant) => [grant.gift, grant.credited])
        .toSorted(),
      `gift claims of ${person.username}`,
    ).toEqual(gifts.map((gift) => [gift, true]).toSorted());
  }

  // Each purchase flagged for review was logged at error by the instance that flagged it (unless killed right then).
  const review = all.filter((purchase) => purchase.reviewSince !== undefined);
  const flagged = new Set(review.map((purchase) => purchase.orderId));
  expect(reviewLogs.filter((line) => !flagged.has(String(line.orderId)))).toEqual([]);
  if (review.length > 0) expect(reviewLogs.length).toBeGreaterThan(0);
  expect(tally.pendingDuringStall).toMatch(/unsettled purchase/);

  // Whatever failed, no answer was a 500: a database that could not serve answered 503, a retry or the settlement did the rest.
  const answers = [...tally.validBuys.flatMap((buy) => buy.answers), ...tally.invalidBuys.map((buy) => buy.answer), ...tally.otherAnswers];
  const statuses = answers.flatMap((answer) => (answer.kind === 'answered' ? [answer.status] : []));
  expect(statuses.filter((status) => status >= 500 && status !== 503)).toEqual([]);
  const faultsInjected = [...tally.databaseFaults.values()].reduce((sum, hits) => sum + hits, 0);

  const points = chargedCentsInAll / 10;
  const told = (text: string) => tally.validBuys.filter((buy) => lastAnswer(buy).kind === 'answered' && textOf(lastAnswer(buy)) === text);
  return [
    `chaos seed ${SEED}: ${tally.validBuys.length} valid buys (${told(SUCCESS).length} success, ` +
      `${told(NOT_ENOUGH_MONEY).length} not enough money, ${told(NOT_CONFIRMED).length} not confirmed, ` +
      `${tally.validBuys.filter((buy) => lastAnswer(buy).kind === 'cut-off').length} cut off), ` +
      `${tally.invalidBuys.length} invalid buys, ${tally.giftClaims} gift claims, ${tally.balanceReads} balance reads`,
    `  ${tally.kills} gateway kills, ${tally.stallEpisodes} stalls (${tally.stalledPayments} payment requests acted on 10–20 s late), ` +
      `${review.length} purchases flagged for review (${reviewLogs.length} error lines)`,
    `  ${charges.length} paid orders = ${credited.length} credited purchases, ` +
      `${points} points credited = 10 × ${points / 10} money charged, exactly; ` +
      `${grants.length} gifts; ${open.length} purchases left pending, their orders unknown to the provider`,
    ...intentFigures,
    `  database faults: ${faultsInjected} commands hit (${[...tally.databaseFaults].map(([kind, hits]) => `${kind}: ${hits}`).join('; ')}); ` +
      `${statuses.filter((status) => status === 503).length} answers 503 (database unavailable), none 500`,
  ];
}

interface Followers {
  /** The balance values each subscription showed, by user: one list per subscription (a cut-off follower subscribes again). */
  values: Map<number, number[][]>;
  /** The codes of the errors subscriptions ended with. */
  errorCodes: string[];
  stop(): Promise<void>;
}

/**
 * A balance subscriber over WebSocket for each of the first SUBSCRIBED_USERS people, on a gateway
 * that is up; cut off (a killed gateway) or ended by an error, it subscribes again, until stopped.
 */
function followBalances(world: World, stream: () => number): Followers {
  const values = new Map<number, number[][]>();
  const errorCodes: string[] = [];
  let stopped = false;
  const follow = async (person: Person) => {
    const subscriptions: number[][] = [];
    values.set(person.id, subscriptions);
    while (!stopped) {
      const url = world.anyGateway(stream);
      if (url !== undefined) {
        const seen: number[] = [];
        subscriptions.push(seen);
        await followOnce(url, person, seen, errorCodes, () => stopped).catch(() => undefined);
      }
      await sleep(between(stream, 100, 300));
    }
  };
  const following = world.people.slice(0, SUBSCRIBED_USERS).map(follow);
  return {
    values,
    errorCodes,
    async stop() {
      stopped = true;
      await Promise.all(following);
    },
  };
}

/** One subscription to `person`'s balance, until its socket closes, it ends, or the followers stop. */
async function followOnce(url: string, person: Person, seen: number[], errorCodes: string[], stopped: () => boolean): Promise<void> {
  const socket = await connectAs(url, `Bearer ${person.token}`);
  let closed = false;
  void socket.closed.then(() => (closed = true));
  try {
    const operation = socket.subscribe('subscription { quota }');
    while (!closed && !stopped()) {
      const message = await operation.next(250).catch(() => undefined);
      if (message === undefined) continue;
      const errors = (message.type === 'error' ? message.payload : message.payload?.errors) as
        { extensions?: { code?: string } }[] | undefined;
      if (errors !== undefined) errorCodes.push(...errors.map((error) => String(error.extensions?.code)));
      if (errors !== undefined || message.type === 'complete') return;
      seen.push((message.payload.data as { quota: number }).quota);
    }
  } finally {
    await socket.close();
  }
}

/** Once all has healed, every follower shows its user's balance. */
async function followersConverged(world: World, followers: Followers): Promise<void> {
  for (const person of world.people.slice(0, SUBSCRIBED_USERS)) {
    await eventually(
      async () => {
        const user = await world.models.users.findOne({ id: person.id }).lean();
        const shown = followers.values.get(person.id)?.at(-1)?.at(-1);
        return shown !== undefined && shown === microsToPoints(user?.balanceMicros ?? 0) ? true : undefined;
      },
      15_000,
      `the balance subscriber of ${person.username} to show the balance`,
    );
  }
}

/** Each subscription showed balances that never went back (they only grow here), and none ended in an internal error. */
function verifyFollowers(followers: Followers): string {
  const subscriptions = [...followers.values.values()].flat();
  for (const shown of subscriptions) expect(shown).toEqual(shown.toSorted((a, b) => a - b));
  expect(followers.errorCodes.filter((code) => code !== 'DATABASE_UNAVAILABLE')).toEqual([]);
  return (
    `  ${followers.values.size} balance subscribers: ${subscriptions.length} subscriptions ` +
    `(${followers.errorCodes.length} ended by DATABASE_UNAVAILABLE, the others by gateway kills), ` +
    `${subscriptions.reduce((sum, shown) => sum + shown.length, 0)} values, never going back, each showing the final balance`
  );
}

function lastAnswer(buy: ValidBuy): Answer {
  return buy.answers.at(-1)!;
}

function textOf(answer: Answer): string | undefined {
  return answer.kind === 'answered' ? answer.text : undefined;
}

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(keyOf(item), [...(groups.get(keyOf(item)) ?? []), item]);
  return groups;
}

/**
 * Each intent to buy (a person's quota: one request, or one key however often it was sent) sent
 * at most one order that could be charged, holding the intent's key, and was charged at most once;
 * every answer its client got agrees with that purchase. Answers the figures of the keyed buys.
 */
function verifyIntents(tally: Tally, all: PurchaseRecord[], charges: SsoStubCharge[]): string[] {
  const intents = new Map(tally.validBuys.map((buy) => [`${buy.person.id}/${buy.quota}`, buy]));
  // A purchase declined as never sent had no order at the provider, and let its key go.
  const sent = groupBy(
    all.filter((purchase) => purchase.declineReason !== 'never-sent'),
    (purchase) => `${purchase.userId}/${purchase.quota}`,
  );
  for (const [intent, purchases] of sent) {
    expect(intents.has(intent), `a purchase for ${intent}, never asked for`).toBe(true);
    expect(
      purchases.map((purchase) => purchase.orderId),
      `orders sent for ${intent}`,
    ).toHaveLength(1);
    expect(purchases[0]!.idempotencyKey, `the key of ${intent}`).toBe(intents.get(intent)?.idempotencyKey);
  }
  const chargedIntents = groupBy(charges, (charge) => `${charge.user}/${Math.round(charge.amount * 10)}`);
  for (const [intent, charged] of chargedIntents) {
    expect(
      charged.map((charge) => charge.order),
      `charges for ${intent}`,
    ).toHaveLength(1);
  }

  for (const { person, quota, answers } of tally.validBuys) {
    const purchase = sent.get(`${person.id}/${quota}`)?.[0];
    const what = `${person.username} ${quota} (${answers.length} attempts)`;
    for (const text of answers.map(textOf)) {
      if (text === SUCCESS) expect(purchase?.state, `success for ${what}`).toBe('credited');
      // The provider refused the money. The purchase was declined then, or by the status check later: when a
      // retry answers a purchase declined since, or when the database failed to record the refusal at once.
      if (text === NOT_ENOUGH_MONEY) {
        expect(purchase, `not enough money for ${what}`).toMatchObject({
          state: 'declined',
          declineReason: expect.stringMatching(/^(insufficient-funds|unpaid)$/),
        });
      }
      expect(text ?? '', what).not.toMatch(/idempotency key/);
    }
  }

  const keyed = tally.validBuys.filter((buy) => buy.idempotencyKey !== undefined);
  const retried = keyed.filter((buy) => buy.answers.length > 1);
  const sentAgain = retried.reduce((sum, buy) => sum + buy.answers.length - 1, 0);
  const neverSent = new Set(
    all.filter((purchase) => purchase.declineReason === 'never-sent').map((purchase) => `${purchase.userId}/${purchase.quota}`),
  );
  const boughtAfresh = retried.filter((buy) => neverSent.has(`${buy.person.id}/${buy.quota}`) && sent.has(`${buy.person.id}/${buy.quota}`));
  return [
    `  ${keyed.length} buys with a key (${keyed.filter((buy) => buy.impatient).length} with an impatient first attempt), ` +
      `${retried.length} sent again with it after a cut-off (${sentAgain} retries; in the end ` +
      `${retried.filter((buy) => textOf(lastAnswer(buy)) === SUCCESS).length} success, ` +
      `${retried.filter((buy) => lastAnswer(buy).kind === 'cut-off').length} still cut off, ` +
      `${boughtAfresh.length} bought afresh after a first purchase cut off before sending its order); ` +
      `${chargedIntents.size} intents charged, none twice`,
  ];
}

/** What an operator sees: `npm run purchases -- --pending`, as built. */
async function listPending(databaseUri: string): Promise<string> {
  const { code, stdout, stderr } = await runCommand('purchases', ['--pending'], { MONGODB_URI: databaseUri });
  if (code !== 0) throw new Error(`npm run purchases -- --pending failed (${code}): ${stderr}`);
  return stdout;
}
