import type { UserRecord } from '../../src/accounts/user.model.js';
import type { PurchaseRecord } from '../../src/billing/purchase.model.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { type RunningService, type ServiceOptions, startService } from '../../src/service.js';
import { type SsoStub, type SsoStubUser, startSsoStub } from '../../src/sso-stub/stub-server.js';
import { startTestGateway, TEST_JWT_SECRET, type TestGateway } from '../support/gateway.js';

/** Helpers shared by the official-deployment tests: a real stub provider and the real gateway, over HTTP. */

export const SSO_SECRET = 'stub-secret-for-billing-tests';

/**
 * Provider patience in tests: two attempts of 2 s, ample on a busy machine. `QUICK_SSO` (two
 * attempts of 1 s) shortens the cases that wait for the whole call window, such as a slow provider.
 */
const PATIENT_SSO = { SSO_TIMEOUT_MS: '2000', SSO_ATTEMPTS: '2' } as const;
export const QUICK_SSO = { SSO_TIMEOUT_MS: '1000', SSO_ATTEMPTS: '2' } as const;

export function startStub(users: Record<string, Partial<SsoStubUser>>): Promise<SsoStub> {
  return startSsoStub({ secret: SSO_SECRET, users });
}

/**
 * The official deployment's settings for a gateway in front of `stub`. The sweep looks for work
 * left by others rarely unless asked to; it still wakes for the purchases of its own instance.
 */
export function officialEnvironment(stub: SsoStub, environment: Record<string, string> = {}): Record<string, string> {
  return {
    DEPLOYMENT: 'official',
    SSO_URL: stub.url,
    SSO_SECRET,
    SETTLEMENT_INTERVAL_MS: '600000',
    ...PATIENT_SSO,
    ...environment,
  };
}

/** The same for a gateway process (`dist/main.js`) on `databaseUri`, logging warnings and errors on stdout. */
export function officialProcessEnvironment(
  stub: SsoStub,
  databaseUri: string,
  environment: Record<string, string> = {},
): Record<string, string> {
  return {
    MONGODB_URI: databaseUri,
    JWT_SECRET: TEST_JWT_SECRET,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    RATE_LIMIT: '0',
    ...officialEnvironment(stub, environment),
  };
}

/** Another instance of the official deployment on `gateway`'s database (its own connection, settlement and sweep), logging nowhere. */
export function startAnotherInstance(
  gateway: TestGateway,
  stub: SsoStub,
  environment: Record<string, string> = {},
  options: ServiceOptions = {},
): Promise<RunningService> {
  const config = loadConfig({
    DATA_DIR: 'memory',
    PORT: '0',
    HOST: '127.0.0.1',
    MONGODB_URI: gateway.testDatabase.uri,
    JWT_SECRET: TEST_JWT_SECRET,
    LOG_LEVEL: 'silent',
    RATE_LIMIT: '0',
    ...officialEnvironment(stub, environment),
  });
  return startService(config, createLogger(config), { monitorDatabaseCommands: true, ...options });
}

export function startOfficialGateway(
  stub: SsoStub,
  environment: Record<string, string> = {},
  options: Parameters<typeof startTestGateway>[1] = {},
): Promise<TestGateway> {
  return startTestGateway(officialEnvironment(stub, environment), options);
}

export interface RestAnswer {
  status: number;
  text: string;
}

/** One legacy REST call with a bare token, as the legacy web client sends it, and any other `headers`. */
export async function rest(
  base: { url: string },
  token: string,
  path: '/quota' | '/buy' | '/package',
  body?: string,
  headers: Record<string, string> = {},
): Promise<RestAnswer> {
  const sent = new Headers(headers);
  sent.set('authorization', token);
  if (body !== undefined) sent.set('content-type', 'application/json');
  const response = await fetch(`${base.url}${path}`, { method: path === '/buy' ? 'POST' : 'GET', headers: sent, body });
  return { status: response.status, text: await response.text() };
}

/** `POST /buy`, with an `Idempotency-Key` header when a key is given. */
export function buy(base: { url: string }, token: string, quota: number, idempotencyKey?: string): Promise<RestAnswer> {
  return rest(base, token, '/buy', JSON.stringify({ quota }), idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey });
}

export async function quotaOf(base: { url: string }, token: string): Promise<number> {
  const answer = await rest(base, token, '/quota');
  const body = JSON.parse(answer.text) as { status: boolean; quota: number };
  if (!body.status) throw new Error(`quota failed: ${answer.text}`);
  return body.quota;
}

export const SUCCESS = '{"status":true,"error":"success"}';
export const NOT_ENOUGH_MONEY = '{"status":false,"error":"not enough money"}';
export const PROVIDER_UNAVAILABLE = '{"status":false,"error":"payment provider unavailable, try again later"}';
export const NOT_CONFIRMED = '{"status":false,"error":"payment not confirmed yet: the points are added if the payment goes through"}';

export function purchasesOf(gateway: TestGateway, userId: number): Promise<PurchaseRecord[]> {
  return gateway.models.purchases.find({ userId }).sort({ openedAt: 1 }).lean<PurchaseRecord[]>();
}

export async function userRecord(gateway: TestGateway, userId: number): Promise<UserRecord | null> {
  return gateway.models.users.findOne({ id: userId }).lean<UserRecord>();
}

/** Calls of the stub to one path. */
export function callsTo(stub: SsoStub, path: string): number {
  return stub.calls.filter((call) => call.path === path).length;
}

export { eventually } from '../support/eventually.js';

/** Runs `tasks` with at most `limit` at once; results in task order. */
export async function withConcurrency<T>(limit: number, tasks: (() => Promise<T>)[]): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, tasks.length) }, async () => {
      while (next < tasks.length) {
        const index = next++;
        results[index] = await tasks[index]!();
      }
    }),
  );
  return results;
}
