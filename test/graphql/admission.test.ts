import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { rateLimited } from '../../src/errors.js';
import type { Admission, AdmissionCheck } from '../../src/operations/admission.js';
import { throughEveryDoor as throughEachDoor } from '../support/every-door.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';

/**
 * One admission sequence for every door: a check installed through the composition root runs for
 * `/graphql`, the REST table, each WebSocket subscribe message, Server-Sent Events and multipart
 * subscriptions, and its refusal is each door's answer.
 */
const REFUSED_USER = 2;
const seen: Admission[] = [];
const addedCheck: AdmissionCheck = (admission) => {
  seen.push(admission);
  if (admission.caller.userId === REFUSED_USER) throw rateLimited(42);
};

let gateway: TestGateway;

beforeAll(async () => {
  gateway = await startTestGateway({}, { admissionChecks: [addedCheck] });
  await gateway.seed({
    users: [
      { id: 1, username: 'alice', quota: 1 },
      { id: REFUSED_USER, username: 'bob', quota: 2 },
    ],
  });
});
afterAll(() => gateway?.stop());

/** One request or operation of `userId` through each door; what each answered. */
async function throughEveryDoor(userId: number): Promise<Record<string, unknown>> {
  return throughEachDoor(gateway, `Bearer ${await gateway.token(userId)}`);
}

describe('a check added to the admission sequence', () => {
  it('runs for every door, once per request or subscribe message, with the caller and the door', async () => {
    seen.length = 0;
    expect(await throughEveryDoor(1)).toEqual({ graphql: 200, rest: 200, websocket: 'next', sse: 'next', multipart: 200 });
    expect(seen.map(({ door, caller }) => [door, caller.userId])).toEqual([
      ['graphql', 1],
      ['rest', 1],
      ['websocket', 1],
      ['sse', 1],
      ['multipart', 1],
    ]);
  });

  it('admits a POST asking for multipart subscriptions once, under the door that answers it', async () => {
    const authorization = `Bearer ${await gateway.token(1)}`;
    const multipartPost = (query: string) =>
      fetch(`${gateway.url}/graphql`, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json', accept: 'multipart/mixed;subscriptionSpec=1.0,application/json' },
        body: JSON.stringify({ query }),
      });
    seen.length = 0;
    const query = await multipartPost('{ quota }');
    expect(query.status).toBe(200);
    await query.body?.cancel();
    const invalid = await multipartPost('subscription { nope }');
    expect(invalid.status).toBe(400);
    await invalid.body?.cancel();
    const subscription = await multipartPost('subscription { quota }');
    expect(subscription.headers.get('content-type')).toMatch(/^multipart\/mixed/);
    await subscription.body?.cancel();
    expect(seen.map(({ door }) => door)).toEqual(['graphql', 'graphql', 'multipart']);
  });

  it('refuses through every door when it throws, in each door’s words', async () => {
    expect(await throughEveryDoor(REFUSED_USER)).toEqual({ graphql: 429, rest: 429, websocket: 'RATE_LIMITED', sse: 429, multipart: 429 });
  });
});
