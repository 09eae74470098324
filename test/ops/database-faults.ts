import { expect } from 'vitest';

import type { FaultDatabase } from '../support/fail-points.js';
import { type GraphQLResponse, startTestGateway, type TestGateway } from '../support/gateway.js';

/** Helpers shared by the database fault tests: the gateway as operators run it, and what it answers. */

export const METRICS_TOKEN = 'metrics-token-for-fault-tests';

/** The REST sentence of a database that cannot serve now, in the endpoint's failure field. */
export const UNAVAILABLE_SENTENCE = 'service temporarily unavailable, try again later';

/**
 * A gateway in production mode (no stack traces, internal errors masked: what operators and
 * clients see) on the fault database, connected through its proxy under the fault tests' appName.
 */
export function startFaultGateway(
  faults: FaultDatabase,
  environment: Record<string, string> = {},
  options: Omit<Parameters<typeof startTestGateway>[1], 'database'> = {},
): Promise<TestGateway> {
  return startTestGateway(
    { MONGODB_URI: faults.gatewayUri, NODE_ENV: 'production', SHUTDOWN_DELAY_MS: '0', METRICS_TOKEN, ...environment },
    { ...options, database: faults.database },
  );
}

export interface Answer {
  status: number;
  text: string;
  ms: number;
}

/** One REST call with `authorization`; a JSON body makes it a POST. */
export async function rest(gateway: TestGateway, authorization: string, path: string, body?: object): Promise<Answer> {
  const started = performance.now();
  const response = await fetch(`${gateway.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, text: await response.text(), ms: Math.round(performance.now() - started) };
}

/** The answer of an endpoint whose failure field is `field` when the database cannot serve. */
export function unavailableAnswer(field: 'message' | 'error'): Pick<Answer, 'status' | 'text'> {
  return { status: 503, text: JSON.stringify({ status: false, [field]: UNAVAILABLE_SENTENCE }) };
}

/** A GraphQL answer of one error, DATABASE_UNAVAILABLE, with HTTP 503 and nothing of the cause (no stack, no driver message). */
export function expectDatabaseUnavailable(response: GraphQLResponse): void {
  expect(response.status).toBe(503);
  expect(response.body.errors).toHaveLength(1);
  expect(response.body.errors![0]).toMatchObject({
    message: 'database unavailable, try again later',
    extensions: { code: 'DATABASE_UNAVAILABLE' },
  });
  expect(JSON.stringify(response.body)).not.toMatch(/stacktrace|Mongo|failpoint/i);
}
