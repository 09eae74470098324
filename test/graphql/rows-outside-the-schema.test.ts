import { Long } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { secretKey, signAccessToken } from '../../src/auth/access-token.js';
import { loadSeed } from '../../src/seed/seed-file.js';
import { startGatewayWithCapturedLog } from '../support/captured-log.js';
import { commandsDuring, graphql, TEST_JWT_SECRET } from '../support/gateway.js';

const ALICE = 1;

let gateway: Awaited<ReturnType<typeof startGatewayWithCapturedLog>>;
let authorization: string;

/** What another writer of the database (the chat service) stored, which the schema cannot show. */
const misfits = [
  // The legacy service stored ids as 64-bit integers.
  { id: Long.fromString('9223372036854775807'), name: 'Largest int64 id' },
  { id: 2 ** 31, name: 'Just past Int' },
  { id: 7, name: undefined },
  { id: 6, name: 'Web flag as a string', enableWeb: 'yes' },
];

beforeAll(async () => {
  gateway = await startGatewayWithCapturedLog();
  await loadSeed(gateway.domains, {
    users: [{ id: ALICE, username: 'alice', quota: 1 }],
    conversations: [1, 2, 3, 4, 5].map((id) => ({
      userId: ALICE,
      id,
      name: `Fits ${id}`,
      model: 'gpt-4o',
      enableWeb: false,
      messages: [],
    })),
  });
  await gateway.domains.conversations.models.conversations.collection.insertMany(
    misfits.map(({ id, name, enableWeb = false }) => ({
      userId: ALICE,
      id,
      model: 'gpt-4o',
      enableWeb,
      messages: [],
      ...(name && { name }),
    })),
  );
  authorization = `Bearer ${await signAccessToken(secretKey(TEST_JWT_SECRET), ALICE)}`;
});

afterAll(() => gateway?.stop());

function leftOutLines() {
  return gateway.log.lines().filter((line) => line.msg === 'stored conversation left out of a page: a field does not fit the schema');
}

describe('a stored conversation the schema cannot show', () => {
  it('is left out of the REST list, which answers the others, and logged at warn with its id', async () => {
    const before = leftOutLines().length;
    const response = await fetch(`${gateway.url}/conversation/list`, { headers: { authorization } });
    expect(response.status).toBe(200);
    expect(await response.text()).toBe(
      '{"status":true,"message":"","data":[' +
        [5, 4, 3, 2, 1]
          .map((id) => `{"id":${id},"user_id":1,"name":"Fits ${id}","message":null,"model":"gpt-4o","enable_web":false}`)
          .join(',') +
        ']}',
    );
    expect(leftOutLines().slice(before)).toEqual([
      expect.objectContaining({ level: 40, userId: ALICE, conversationId: '9223372036854775807', field: 'id' }),
      expect.objectContaining({ level: 40, userId: ALICE, conversationId: '2147483648', field: 'id' }),
      expect.objectContaining({ level: 40, userId: ALICE, conversationId: '7', field: 'name' }),
      expect.objectContaining({ level: 40, userId: ALICE, conversationId: '6', field: 'enableWeb' }),
    ]);
  });

  it('is left out of GraphQL pages, which stay full and walk every other conversation once', async () => {
    const PAGE = `query Page($after: String) {
      conversations(first: 2, after: $after) { nodes { number name } pageInfo { hasNextPage endCursor } }
    }`;
    const seen: number[] = [];
    let after: string | null = null;
    for (let pages = 0; pages < 5; pages++) {
      const { status, body } = await graphql(gateway, PAGE, { authorization, variables: { after } });
      expect(status).toBe(200);
      expect(body.errors).toBeUndefined();
      const page: any = body.data!.conversations;
      expect(page.nodes.length).toBe(page.pageInfo.hasNextPage ? 2 : 1);
      seen.push(...page.nodes.map((node: { number: number }) => node.number));
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    expect(seen).toEqual([5, 4, 3, 2, 1]);
  });

  it('costs a page more reads only when rows left out leave it short', async () => {
    // The REST list reads up to 101 rows at once: the nine stored all came in its one read.
    const list = () => fetch(`${gateway.url}/conversation/list`, { headers: { authorization } }).then((response) => response.json());
    expect(await commandsDuring(gateway, list)).toEqual(['find']);
    // Two a page (three rows read, to know whether more follow): four rows left out, then one more to fill it.
    const PAGE = `query Page($after: String) { conversations(first: 2, after: $after) { nodes { number } pageInfo { endCursor } } }`;
    let endCursor = '';
    expect(
      await commandsDuring(gateway, async () => {
        endCursor = (await graphql(gateway, PAGE, { authorization })).body.data!.conversations.pageInfo.endCursor;
      }),
    ).toEqual(['find', 'find', 'find']);
    expect(
      await commandsDuring(gateway, async () => {
        const { body } = await graphql(gateway, PAGE, { authorization, variables: { after: endCursor } });
        expect(body.data!.conversations.nodes).toEqual([{ number: 3 }, { number: 2 }]);
      }),
    ).toEqual(['find']);
  });

  it('leaves loading, renaming and deleting the others as they were', async () => {
    const load = await fetch(`${gateway.url}/conversation/load?id=5`, { headers: { authorization } });
    expect(await load.json()).toMatchObject({ status: true, data: { id: 5, name: 'Fits 5' } });
    const { body } = await graphql(
      gateway,
      'mutation { renameConversationByNumber(number: 5, name: "Renamed") { ok } deleteConversationByNumber(number: 4) { ok } }',
      {
        authorization,
      },
    );
    expect(body.data).toEqual({ renameConversationByNumber: { ok: true }, deleteConversationByNumber: { ok: true } });
  });
});
