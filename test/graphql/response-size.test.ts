import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { RunningSidecar } from '../../src/rest/sidecar.js';
import { graphql, type GraphQLResponse, startTestGateway, type TestGateway } from '../support/gateway.js';
import { startTestSidecar } from '../support/sidecar.js';
import { connectAs, type TestSocket } from '../support/websocket.js';

const KiB = 1024;
const MiB = 1024 * KiB;
/** The limit of the second gateway, the smallest allowed: one answer of 64 KiB of stored text. */
const SMALL_LIMIT = 64 * KiB;
/** The default limit. */
const DEFAULT_LIMIT = 32 * MiB;

/** The caller of the audit: one conversation of 1 MiB of their own, and smaller ones. */
const ALICE = 1;
/** Four conversations of 12 MiB each: together more than the default limit. */
const BOB = 2;
/** 100 conversations named with 255 three-byte characters each: a legacy list of 77 kB. */
const CAROL = 3;

const AUDITED = 1;
/** Between half the small limit and the small limit: one fits in an answer there, two do not. */
const MEDIUM = 2;
const LARGE_TO_SMALL_GATEWAY = AUDITED;

/** A conversation of `bytes` of message text in 16 messages, as a chat service stores a long chat. */
function conversation(userId: number, id: number, bytes: number, name = `Chat ${id}`) {
  const messages = Array.from({ length: 16 }, (_, index) => ({
    role: index % 2 ? 'assistant' : 'user',
    content: String.fromCharCode(97 + index).repeat(bytes / 16),
  }));
  return { userId, id, name, model: 'gpt-4o', enableWeb: false, messages };
}

let gateway: TestGateway;
/** The same database behind a gateway whose answers may carry 64 KiB. */
let small: TestGateway;
let sidecar: RunningSidecar;
let alice: string;
let bob: string;
let carol: string;
const sockets: TestSocket[] = [];

beforeAll(async () => {
  gateway = await startTestGateway();
  await gateway.seed({
    users: [
      { id: ALICE, username: 'alice', quota: 1 },
      { id: BOB, username: 'bob', quota: 1 },
      { id: CAROL, username: 'carol', quota: 1 },
    ],
    conversations: [
      conversation(ALICE, AUDITED, MiB),
      conversation(ALICE, MEDIUM, 40 * KiB),
      conversation(ALICE, 3, 1 * KiB),
      ...[1, 2, 3, 4].map((id) => conversation(BOB, id, 12 * MiB)),
      ...Array.from({ length: 100 }, (_, index) => conversation(CAROL, index + 1, 16, '会'.repeat(255))),
    ],
  });
  small = await startTestGateway({ RESPONSE_MAX_BYTES: String(SMALL_LIMIT) }, { database: gateway.testDatabase });
  sidecar = await startTestSidecar(`${small.url}/graphql`);
  const bearer = async (user: number) => `Bearer ${await gateway.token(user)}`;
  [alice, bob, carol] = await Promise.all([bearer(ALICE), bearer(BOB), bearer(CAROL)]);
}, 120_000);

afterAll(async () => {
  await Promise.all(sockets.map((socket) => socket.close()));
  await sidecar?.stop();
  await small?.stop();
  await gateway?.stop();
});

async function idOf(authorization: string, number: number): Promise<string> {
  const { body } = await graphql(gateway, `{ conversation(number: ${number}) { id } }`, { authorization });
  return body.data!.conversation.id;
}

/** The body of the answer to an operation that asked for more than `maxBytes`: that failure alone, no `data`. */
function refusal(maxBytes: number) {
  return {
    errors: [
      {
        message: `the answer would be larger than ${maxBytes} bytes, the most one answer may carry: ask for fewer conversations or messages at once`,
        extensions: { code: 'RESPONSE_TOO_LARGE', maxBytes },
      },
    ],
  };
}

type Errors = GraphQLResponse['body']['errors'];

/** Errors without the stack traces shown outside production. */
function withoutStacks(errors: Errors): Errors {
  return errors?.map(({ extensions: { stacktrace: _stacktrace, ...extensions } = {}, ...error }: any) => ({ ...error, extensions }));
}

/** An answer's status and errors, and whether it has data (never the data: a failure would print megabytes). */
function outcome({ status, body }: GraphQLResponse) {
  return { status, errors: withoutStacks(body.errors), data: 'data' in body };
}

/** The outcome of an answer refused for carrying more than `maxBytes`: HTTP 400, that failure alone. */
function refused(maxBytes: number) {
  return { status: 400, errors: refusal(maxBytes).errors, data: false };
}

/** A legacy GET with the bare token, as the legacy web client sends it. */
async function legacy(base: { url: string }, path: string, authorization: string) {
  const response = await fetch(`${base.url}${path}`, { headers: { authorization: authorization.replace('Bearer ', '') } });
  const text = await response.text();
  return { status: response.status, text, length: Number(response.headers.get('content-length')) };
}

const MESSAGES = 'messages { role content }';

describe('Query.nodes with an id given more than once (the audit: 2 aliases × 100 repeats of a 1 MiB conversation)', () => {
  it('refuses the repeats as bad user input, before reading anything', async () => {
    const id = await idOf(alice, AUDITED);
    const query = `query Repeats($ids: [ID!]!) {
  a: nodes(ids: $ids) { ... on Conversation { messages { content } } }
  b: nodes(ids: $ids) { ... on Conversation { messages { content } } }
}`;
    let answer: GraphQLResponse | undefined;
    const commands = await gateway.commandsDuring(async () => {
      answer = await graphql(gateway, query, { authorization: alice, variables: { ids: Array.from({ length: 100 }, () => id) } });
    });
    expect(commands).toEqual([]);
    const message = '`ids` holds the same id more than once (positions 0 and 1): give each id once';
    // The first alias refused nulls the whole answer (`nodes` is non-null), so the second is not even run.
    expect({ ...answer!.body, errors: withoutStacks(answer!.body.errors), status: answer!.status }).toEqual({
      status: 200,
      errors: [{ message, locations: [{ line: 2, column: 3 }], path: ['a'], extensions: { code: 'BAD_USER_INPUT' } }],
      data: null,
    });
  });

  it('names the first repeat, wherever it is, and refuses repeats of ids that name nothing alike', async () => {
    const ids = [await idOf(alice, 3), await idOf(alice, MEDIUM), 'nonsense', await idOf(alice, 3)];
    for (const [given, positions] of [
      [ids, '0 and 3'],
      [['nonsense', ids[0], 'nonsense'], '0 and 2'],
    ] as const) {
      const { body } = await graphql(gateway, 'query Nodes($ids: [ID!]!) { nodes(ids: $ids) { id } }', {
        authorization: alice,
        variables: { ids: given },
      });
      expect(body.errors?.map((error) => [error.extensions?.code, error.message])).toEqual([
        ['BAD_USER_INPUT', `\`ids\` holds the same id more than once (positions ${positions}): give each id once`],
      ]);
    }
  });

  it('answers each distinct id once per alias that names it', async () => {
    const id = await idOf(alice, AUDITED);
    const response = await graphql(
      gateway,
      `query Twice($ids: [ID!]!) { a: nodes(ids: $ids) { id ... on Conversation { ${MESSAGES} } } b: nodes(ids: $ids) { id } }`,
      { authorization: alice, variables: { ids: [id] } },
    );
    expect(response.status).toBe(200);
    const { messages } = conversation(ALICE, AUDITED, MiB);
    expect(response.body).toEqual({ data: { a: [{ id, messages }], b: [{ id }] } });
  });
});

describe(`answers larger than RESPONSE_MAX_BYTES (${SMALL_LIMIT} bytes here)`, () => {
  it('answers an operation whose stored text fits, and refuses one that repeats it past the limit, with no data', async () => {
    const once = `{ conversation(number: ${MEDIUM}) { name ${MESSAGES} } }`;
    expect(outcome(await graphql(small, once, { authorization: alice }))).toEqual({ status: 200, errors: undefined, data: true });

    const response = await fetch(`${small.url}/graphql`, {
      method: 'POST',
      headers: { authorization: alice, 'content-type': 'application/json' },
      body: JSON.stringify({
        query: `{ a: conversation(number: ${MEDIUM}) { ${MESSAGES} } b: conversation(number: ${MEDIUM}) { ${MESSAGES} } }`,
      }),
    });
    const text = await response.text();
    expect(outcome({ status: response.status, headers: response.headers, body: JSON.parse(text) })).toEqual(refused(SMALL_LIMIT));
    // The whole answer is the refusal, written out in full: nothing of the data it refused.
    expect(Number(response.headers.get('content-length'))).toBe(Buffer.byteLength(text));
    expect(await graphql(small, '{ quota }', { authorization: alice })).toMatchObject({ status: 200, body: { data: { quota: 1 } } });
  });

  it('refuses messages aliased within one conversation like conversations aliased in one operation', async () => {
    const query = `{ conversation(number: ${MEDIUM}) { a: ${MESSAGES} b: ${MESSAGES} } }`;
    expect(outcome(await graphql(small, query, { authorization: alice }))).toEqual(refused(SMALL_LIMIT));
  });

  it('refuses a conversation larger than the limit, on /graphql and in the legacy load’s own shape, in process and through the sidecar', async () => {
    const query = `{ conversation(number: ${LARGE_TO_SMALL_GATEWAY}) { ${MESSAGES} } }`;
    expect(outcome(await graphql(small, query, { authorization: alice }))).toEqual(refused(SMALL_LIMIT));

    const expected = JSON.stringify({ status: false, message: refusal(SMALL_LIMIT).errors[0]!.message });
    for (const base of [small, sidecar]) {
      expect(await legacy(base, `/conversation/load?id=${LARGE_TO_SMALL_GATEWAY}`, alice)).toEqual({
        status: 200,
        text: expected,
        length: Buffer.byteLength(expected),
      });
    }
    expect((await legacy(gateway, `/conversation/load?id=${LARGE_TO_SMALL_GATEWAY}`, alice)).text.slice(0, 40)).toMatch(
      /^\{"status":true,/,
    );
  });

  it('counts names in bytes: a legacy list of 100 conversations named in three-byte characters is refused, half of it answered', async () => {
    const expected = JSON.stringify({ status: false, message: refusal(SMALL_LIMIT).errors[0]!.message });
    expect(await legacy(small, '/conversation/list', carol)).toEqual({ status: 200, text: expected, length: Buffer.byteLength(expected) });
    expect((await legacy(gateway, '/conversation/list', carol)).text.slice(0, 80)).toMatch(
      /^\{"status":true,"message":"","data":\[\{"id":100,/,
    );

    const half = await graphql(small, '{ conversations(first: 40) { nodes { name } } }', { authorization: carol });
    expect(half.body.data?.conversations.nodes).toHaveLength(40);
    const whole = await graphql(small, '{ conversations { nodes { name } } }', { authorization: carol });
    expect(outcome(whole)).toEqual(refused(SMALL_LIMIT));
  });

  it('refuses a subscription event whose conversation is larger than the limit, and goes on with the next', async () => {
    const socket = await connectAs(small.url, alice);
    sockets.push(socket);
    const events = socket.subscribe(`subscription { conversationEvents { kind number conversation { ${MESSAGES} } } }`);
    const rename = (number: number, name: string) =>
      graphql(small, `mutation { renameConversationByNumber(number: ${number}, name: "${name}") { ok } }`, { authorization: alice });
    await rename(LARGE_TO_SMALL_GATEWAY, 'Large, renamed');
    const event = await events.next(10_000);
    expect({ type: event.type, errors: event.payload.errors, data: 'data' in event.payload }).toEqual({
      type: 'next',
      errors: refusal(SMALL_LIMIT).errors,
      data: false,
    });
    await rename(3, 'Small, renamed');
    expect(await events.next(10_000)).toEqual({
      type: 'next',
      payload: {
        data: { conversationEvents: { kind: 'UPDATED', number: 3, conversation: { messages: conversation(ALICE, 3, KiB).messages } } },
      },
    });
  });
});

describe(`answers larger than the default limit (${DEFAULT_LIMIT} bytes)`, () => {
  it('refuses a page of several large conversations with their messages, before building it', async () => {
    const page = `{ conversations(first: 100) { nodes { number ${MESSAGES} } } }`;
    let answer: GraphQLResponse | undefined;
    const commands = await gateway.commandsDuring(async () => {
      answer = await graphql(gateway, page, { authorization: bob });
    });
    expect(outcome(answer!)).toEqual(refused(DEFAULT_LIMIT));
    // The page, then its messages a conversation per batch (16 MiB at most each): the read stops at the
    // third, past the limit, and closes its cursor; the fourth is never fetched.
    expect(commands).toEqual(['find', 'find', 'getMore', 'getMore', 'killCursors']);

    const two = await graphql(
      gateway,
      `
        {
          conversations(first: 2) {
            nodes {
              number
              messages {
                role
              }
            }
          }
        }
      `,
      { authorization: bob },
    );
    expect(two.body.data?.conversations.nodes.map((node: { number: number }) => node.number)).toEqual([4, 3]);
  });

  it('answers the legacy load of one large conversation', async () => {
    const answer = await legacy(gateway, '/conversation/load?id=1', bob);
    expect(answer.status).toBe(200);
    expect(answer.text.slice(0, 60)).toMatch(/^\{"status":true,"message":"success","data":\{/);
    expect(answer.length).toBeGreaterThan(12 * MiB);
  });
});
