import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { secretKey, signAccessToken } from '../../src/auth/access-token.js';
import { withDatabaseName } from '../../src/db/uri.js';
import type { SsoStub } from '../../src/sso-stub/stub-server.js';
import { TEST_JWT_SECRET } from '../support/gateway.js';
import { buy, eventually, officialProcessEnvironment, quotaOf, startStub } from './official.js';

/** A process of the built service (the vitest global setup builds dist/), and the URL it printed. */
interface Running {
  child: ChildProcess;
  address: string;
}

const children = new Set<ChildProcess>();

/** Starts `node dist/<script>` and waits for output (stdout or stderr) matching `ready`; its first group is the address. */
async function run(script: string, args: string[], env: Record<string, string>, ready: RegExp): Promise<Running> {
  const child = spawn(process.execPath, [script, ...args], {
    env: { PATH: process.env.PATH ?? '', DATA_DIR: 'memory', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  let output = '';
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script} did not start:\n${output}`)), 20_000);
    const seen = (chunk: Buffer) => {
      output += chunk.toString();
      const match = ready.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', seen);
    child.stderr!.on('data', seen);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited with ${code}:\n${output}`));
    });
  });
  return { child, address };
}

async function kill(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill(signal);
  await exited;
}

let stub: SsoStub;
let database: Running;
let databaseUri: string;
let scratch: string;

beforeAll(async () => {
  stub = await startStub({ quinn: { wallet: 50 } });
  database = await run('dist/cli/embedded-db.js', ['--port', '0'], {}, /(mongodb:\/\/127\.0\.0\.1:\d+)/);
  databaseUri = withDatabaseName(database.address, 'crash-test');
  scratch = await mkdtemp(join(tmpdir(), 'chat-gateway-crash-'));
});

afterAll(async () => {
  for (const child of children) await kill(child, 'SIGKILL');
  await stub?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

function startGateway(extra: Record<string, string> = {}): Promise<Running> {
  return run(
    'dist/main.js',
    [],
    officialProcessEnvironment(stub, databaseUri, { SSO_TIMEOUT_MS: '1500', SSO_ATTEMPTS: '1', SETTLEMENT_INTERVAL_MS: '200', ...extra }),
    /listening on (http:\/\/[\d.:]+)/,
  );
}

describe('a gateway killed between charge and credit', () => {
  it('credits the charged purchase exactly once after it starts again on the same database', async () => {
    const seedFile = join(scratch, 'seed.json');
    await writeFile(seedFile, JSON.stringify({ users: [{ id: 1, username: 'quinn', quota: 2.5 }] }));
    const token = await signAccessToken(secretKey(TEST_JWT_SECRET), 1);
    const before = await startGateway({ SEED_FILE: seedFile });
    const gateway = { url: before.address };
    expect(await quotaOf(gateway, token)).toBe(2.5);

    // The provider charges at once, then holds its answer; the gateway is killed while it waits.
    stub.setFaults({ delayMs: 60_000 });
    const answer = buy(gateway, token, 250).then(
      () => 'answered',
      () => 'cut off',
    );
    await eventually(async () => (stub.paidOrders().length === 1 ? true : undefined), 5_000, 'the charge');
    await kill(before.child, 'SIGKILL');
    expect(await answer).toBe('cut off');
    stub.setFaults({});
    expect(stub.wallet('quinn')).toBe(25);

    const connection = await mongoose.createConnection(databaseUri).asPromise();
    try {
      const [purchase] = await connection.collection('purchases').find({}).toArray();
      expect(purchase).toMatchObject({ orderId: stub.paidOrders()[0], state: 'pending', quota: 250 });
      expect(await connection.collection('users').findOne({ id: 1 })).toMatchObject({
        balanceMicros: 2_500_000,
        pendingOrders: [stub.paidOrders()[0]],
      });

      const after = await startGateway();
      const restarted = { url: after.address };
      await eventually(async () => ((await quotaOf(restarted, token)) === 252.5 ? true : undefined), 15_000, 'the credit');

      expect(await quotaOf(restarted, token)).toBe(252.5);
      expect(stub.wallet('quinn')).toBe(25);
      expect(stub.paidOrders()).toHaveLength(1);
      expect(
        await connection
          .collection('purchases')
          .find({}, { projection: { _id: 0, state: 1 } })
          .toArray(),
      ).toEqual([{ state: 'credited' }]);
      expect(await connection.collection('users').findOne({ id: 1 })).toMatchObject({ balanceMicros: 252_500_000, pendingOrders: [] });
      await kill(after.child, 'SIGTERM');
      expect(after.child.exitCode).toBe(0);
    } finally {
      await connection.close();
    }
  }, 40_000);
});
