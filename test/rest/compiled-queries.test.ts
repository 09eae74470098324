import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { BROKEN, seedBrokenConversation } from '../support/broken-conversation.js';
import { startGatewayWithCapturedLog } from '../support/captured-log.js';
import { sample, scrapeMetrics } from '../support/metrics.js';

/**
 * The REST table's queries run as code compiled at start, outside Apollo Server's request
 * pipeline; what that pipeline does for them must still happen: metrics, the log of unexpected
 * errors, their masking and their answer.
 */
const METRICS_TOKEN = 'metrics-token-0123456789';

let gateway: Awaited<ReturnType<typeof startGatewayWithCapturedLog>>;
let authorization: string;

beforeAll(async () => {
  gateway = await startGatewayWithCapturedLog({ NODE_ENV: 'production', METRICS_TOKEN });
  authorization = await seedBrokenConversation(gateway);
});
afterAll(() => gateway?.stop());

const get = (path: string) => fetch(`${gateway.url}${path}`, { headers: { authorization } });
const post = (path: string, body: unknown) =>
  fetch(`${gateway.url}${path}`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

async function growth(work: () => Promise<unknown>, ...samples: [string, Record<string, string>][]): Promise<number[]> {
  const before = await scrapeMetrics(gateway.url, METRICS_TOKEN);
  await work();
  const after = await scrapeMetrics(gateway.url, METRICS_TOKEN);
  return samples.map(([name, labels]) => sample(after, name, labels) - sample(before, name, labels));
}

describe('the REST layer’s queries', () => {
  it('run as compiled code from their first request, and are counted as operations; mutations go through Apollo Server', async () => {
    const compiled = ['graphql_executions_total', { executor: 'compiled' }] as [string, Record<string, string>];
    const interpreted = ['graphql_executions_total', { executor: 'graphql-js' }] as [string, Record<string, string>];
    const listed = ['graphql_operations_total', { operation_name: 'ListConversations', operation_type: 'query', result: 'success' }] as [
      string,
      Record<string, string>,
    ];
    expect(await growth(async () => expect((await get('/conversation/list')).status).toBe(200), compiled, interpreted, listed)).toEqual([
      1, 0, 1,
    ]);
    const renamed = await growth(
      async () =>
        expect(await (await post('/conversation/rename', { id: 1, name: 'Lisbon' })).json()).toEqual({ status: true, message: '' }),
      compiled,
      interpreted,
    );
    expect(renamed).toEqual([0, 1]);
  });

  it('answer an unexpected error as 500 with the request id, logged once with it and the operation, counted by its code', async () => {
    let response: Response | undefined;
    const [errors, failed] = await growth(
      async () => {
        response = await get(`/conversation/load?id=${BROKEN}`);
      },
      ['graphql_errors_total', { code: 'INTERNAL_SERVER_ERROR' }],
      ['graphql_operations_total', { operation_name: 'LoadConversation', operation_type: 'query', result: 'error' }],
    );
    const requestId = response!.headers.get('x-request-id');
    expect(response!.status).toBe(500);
    expect(await response!.json()).toEqual({ status: false, message: 'internal error', request_id: requestId });
    expect([errors, failed]).toEqual([1, 1]);
    const logged = gateway.log
      .lines()
      .filter((line) => line.msg === 'unexpected error in a GraphQL operation' && line.requestId === requestId);
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({
      level: 50,
      operation: 'LoadConversation',
      err: { message: expect.stringContaining('String cannot represent') },
    });
    // The failure handler that writes its answer does not log its error again (the request's own line has no `err`).
    expect(gateway.log.lines().filter((line) => line.requestId === requestId && line.err !== undefined)).toHaveLength(1);
  });
});
