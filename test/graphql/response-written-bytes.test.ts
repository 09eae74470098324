import { createClient as createSseClient } from 'graphql-sse';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { RunningSidecar } from '../../src/rest/sidecar.js';
import { writtenBytes } from '../../src/shared/written-bytes.js';
import { Received, subscriptionsRunning } from '../subscriptions/helpers.js';
import { graphql, startTestGateway, type TestGateway } from '../support/gateway.js';
import { startTestSidecar } from '../support/sidecar.js';
import { connectAs, type TestSocket } from '../support/websocket.js';

const MiB = 1024 * 1024;
/** The audit's limit. */
const LIMIT = 4 * MiB;
const ALICE = 1;

/** The audit's conversation: 3 MiB stored, mostly control characters and quotes, which JSON writes in 6 and 2 bytes. */
const AUDITED = 1;
/** Stored text that JSON writes in exactly LIMIT bytes, with the conversation's name, model and roles: it fits. */
const AT_THE_LIMIT = 2;
/** The same, one byte more as written (a quote where a letter was): past the limit. */
const PAST_THE_LIMIT = 3;
/** A small one, for the event that follows a refused one. */
const SMALL = 4;

const NAME = 'Audit';
const MODEL = 'gpt-4o';
/** Seven control characters and a quote: 8 stored bytes, 44 written. */
const HOSTILE = '\u0001\u0002\u0003\u0004\u0005\u0006\u0007"';

function conversation(id: number, contents: string[]) {
  return {
    userId: ALICE,
    id,
    name: NAME,
    model: MODEL,
    enableWeb: false,
    messages: contents.map((content) => ({ role: 'user', content })),
  };
}

/** 16 messages of 192 KiB each, of HOSTILE: 3 MiB stored, 16.5 MiB written. */
const auditedContents = Array.from({ length: 16 }, () => HOSTILE.repeat((3 * MiB) / 16 / HOSTILE.length));

/**
 * One message whose text is written in exactly `bytes` bytes, of every kind of escape a database
 * can hold: short ones, six-byte ones, quotes, a backslash, a surrogate pair, two- and three-byte
 * characters. Its quotes keep it well below `bytes` as stored (reads are stopped by their stored size).
 */
function contentWritten(bytes: number): string {
  const head = '\n\t\u0001\u001f\\😀é会' + '"'.repeat(64 * 1024);
  const text = head + 'a'.repeat(bytes - writtenBytes(head));
  expect(writtenBytes(text)).toBe(bytes);
  expect(Buffer.byteLength(JSON.stringify(text)) - 2).toBe(bytes);
  return text;
}

/** What the budget counts for a conversation besides its messages' contents: name, model and one role. */
const AROUND = NAME.length + MODEL.length + 'user'.length;
const fitting = contentWritten(LIMIT - AROUND);
const onePast = fitting.slice(0, -1) + '"';

let gateway: TestGateway;
/** The same database behind a gateway at the default limit (32 MiB), which answers the audited conversation. */
let roomy: TestGateway;
/** A sidecar with the audit's limit in front of the roomy gateway: it must refuse on its own. */
let sidecar: RunningSidecar;
let alice: string;
const sockets: TestSocket[] = [];

beforeAll(async () => {
  gateway = await startTestGateway({ RESPONSE_MAX_BYTES: String(LIMIT) });
  await gateway.seed({
    users: [{ id: ALICE, username: 'alice', quota: 1 }],
    conversations: [
      conversation(AUDITED, auditedContents),
      conversation(AT_THE_LIMIT, [fitting]),
      conversation(PAST_THE_LIMIT, [onePast]),
      conversation(SMALL, ['hello']),
    ],
  });
  roomy = await startTestGateway({}, { database: gateway.testDatabase });
  sidecar = await startTestSidecar(`${roomy.url}/graphql`, { environment: { RESPONSE_MAX_BYTES: String(LIMIT) } });
  alice = `Bearer ${await gateway.token(ALICE)}`;
}, 120_000);

afterAll(async () => {
  await Promise.all(sockets.map((socket) => socket.close()));
  await sidecar?.stop();
  await roomy?.stop();
  await gateway?.stop();
});

const MESSAGES = 'messages { role content }';
const refusalMessage = `the answer would be larger than ${LIMIT} bytes, the most one answer may carry: ask for fewer conversations or messages at once`;
const refusal = { message: refusalMessage, extensions: { code: 'RESPONSE_TOO_LARGE', maxBytes: LIMIT } };
const legacyRefusal = JSON.stringify({ status: false, message: refusalMessage });

/** POSTs an operation; its status, the bytes of its body, and the body. */
async function post(base: { url: string }, query: string) {
  const response = await fetch(`${base.url}/graphql`, {
    method: 'POST',
    headers: { authorization: alice, 'content-type': 'application/json' },
    body: JSON.stringify({ query }),
  });
  const text = await response.text();
  return { status: response.status, bytes: Buffer.byteLength(text), body: JSON.parse(text) as { data?: unknown; errors?: unknown[] } };
}

/** The refusal's error without the stack trace shown outside production. */
function firstError(body: { errors?: unknown[] }) {
  const { extensions, message } = (body.errors?.[0] ?? {}) as { message?: string; extensions?: Record<string, unknown> };
  const { stacktrace: _stacktrace, ...rest } = extensions ?? {};
  return { message, extensions: rest };
}

async function legacyLoad(base: { url: string }, id: number) {
  const response = await fetch(`${base.url}/conversation/load?id=${id}`, { headers: { authorization: alice.replace('Bearer ', '') } });
  const text = await response.text();
  return { status: response.status, text, bytes: Buffer.byteLength(text) };
}

describe(`the audit's conversation (3 MiB stored, mostly control characters and quotes) and a ${LIMIT}-byte limit`, () => {
  it('is stored in 3 MiB and written in more than four times the limit', async () => {
    const stored = auditedContents.reduce((sum, content) => sum + Buffer.byteLength(content), 0);
    expect(stored).toBe(3 * MiB);
    // At the default limit the whole answer is written: this is what the audited gateway wrote at 4 MiB.
    const answer = await post(roomy, `{ conversation(number: ${AUDITED}) { ${MESSAGES} } }`);
    expect(answer.status).toBe(200);
    expect(answer.bytes).toBeGreaterThan(4 * LIMIT);
  });

  it('is refused on /graphql, the answer being the refusal alone', async () => {
    const answer = await post(gateway, `{ conversation(number: ${AUDITED}) { name ${MESSAGES} } }`);
    expect({ status: answer.status, data: 'data' in answer.body, error: firstError(answer.body) }).toEqual({
      status: 400,
      data: false,
      error: refusal,
    });
    // A few hundred bytes, and the stack trace shown outside production.
    expect(answer.bytes).toBeLessThan(8 * 1024);
  });

  it('is refused by the legacy load, in its own shape', async () => {
    expect(await legacyLoad(gateway, AUDITED)).toEqual({ status: 200, text: legacyRefusal, bytes: Buffer.byteLength(legacyRefusal) });
  });

  it('is refused by a sidecar at that limit in front of a gateway that answers it, without reading the rest', async () => {
    expect(await legacyLoad(sidecar, AUDITED)).toEqual({ status: 200, text: legacyRefusal, bytes: Buffer.byteLength(legacyRefusal) });
    // The gateway behind it answers the same load in full.
    const upstream = await legacyLoad(roomy, AUDITED);
    expect(upstream.bytes).toBeGreaterThan(4 * LIMIT);
    // And the sidecar goes on serving what fits.
    const small = await legacyLoad(sidecar, SMALL);
    expect(JSON.parse(small.text)).toMatchObject({ status: true, data: { id: SMALL, message: [{ role: 'user', content: 'hello' }] } });
  });

  it('is refused as a subscription event over a WebSocket, and the next event is answered', async () => {
    const socket = await connectAs(gateway.url, alice);
    sockets.push(socket);
    const events = socket.subscribe(`subscription { conversationEvents { kind number conversation { ${MESSAGES} } } }`);
    await rename(AUDITED, 'Audit, renamed');
    const event = await events.next(20_000);
    expect({ type: event.type, error: firstError(event.payload), data: 'data' in event.payload }).toEqual({
      type: 'next',
      error: refusal,
      data: false,
    });
    await rename(SMALL, 'Small, renamed');
    expect(await events.next(10_000)).toEqual({
      type: 'next',
      payload: {
        data: { conversationEvents: { kind: 'UPDATED', number: SMALL, conversation: { messages: [{ role: 'user', content: 'hello' }] } } },
      },
    });
  });

  it('is refused as a subscription event over Server-Sent Events', async () => {
    const client = createSseClient({ url: `${gateway.url}/graphql/stream`, headers: { authorization: alice }, retryAttempts: 0 });
    const running = await subscriptionsRunning(gateway.url);
    const received = new Received();
    const dispose = client.subscribe(
      { query: `subscription { conversationEvents { number conversation { ${MESSAGES} } } }` },
      received.sink,
    );
    try {
      await expect.poll(() => subscriptionsRunning(gateway.url), { timeout: 10_000, interval: 20 }).toBe(running + 1);
      await rename(AUDITED, 'Audit, renamed again');
      const [event] = await received.first(1, 20_000);
      expect({ data: 'data' in event!, error: firstError(event as { errors?: unknown[] }) }).toEqual({ data: false, error: refusal });
    } finally {
      dispose();
      client.dispose();
    }
  });

  it('is refused as a subscription event over multipart HTTP, the event being the refusal alone', async () => {
    const running = await subscriptionsRunning(gateway.url);
    const controller = new AbortController();
    const answer = await fetch(`${gateway.url}/graphql`, {
      method: 'POST',
      headers: { authorization: alice, 'content-type': 'application/json', accept: 'multipart/mixed;subscriptionSpec="1.0"' },
      body: JSON.stringify({ query: `subscription { conversationEvents { number conversation { ${MESSAGES} } } }` }),
      signal: controller.signal,
    });
    try {
      await expect.poll(() => subscriptionsRunning(gateway.url), { timeout: 10_000, interval: 20 }).toBe(running + 1);
      await rename(AUDITED, 'Audit, renamed over multipart');
      const reader = answer.body!.getReader();
      const decoder = new TextDecoder();
      let text = '';
      while (!text.includes('"payload"')) text += decoder.decode((await reader.read()).value, { stream: true });
      const part = text.slice(text.indexOf('{"payload"'));
      const line = part.slice(0, part.indexOf('\r\n'));
      expect(Buffer.byteLength(line)).toBeLessThan(4096);
      const { payload } = JSON.parse(line) as { payload: { data?: unknown; errors?: unknown[] } };
      expect({ data: 'data' in payload && payload.data !== null, error: firstError(payload) }).toEqual({ data: false, error: refusal });
    } finally {
      controller.abort();
    }
  });
});

async function rename(number: number, name: string): Promise<void> {
  const { body } = await graphql(gateway, `mutation { renameConversationByNumber(number: ${number}, name: "${name}") { ok } }`, {
    authorization: alice,
  });
  expect(body.data).toEqual({ renameConversationByNumber: { ok: true } });
}

describe('writtenBytes', () => {
  it('counts what JSON.stringify writes, lone surrogates and every control character included', () => {
    const samples = [
      '',
      'plain',
      '"\\',
      '\b\f\n\r\t',
      '\u0000\u0001\u001f\u007f',
      '\ud800',
      'a\udc00b',
      '\udbff\udfff',
      '\udfff\udbff',
      'é会😀',
      '\u2028',
    ];
    for (let unit = 0; unit < 0x10000; unit += 1) samples.push(String.fromCharCode(unit), `x${String.fromCharCode(unit)}\ud83d`);
    for (const text of samples) expect([text, writtenBytes(text)]).toEqual([text, Buffer.byteLength(JSON.stringify(text)) - 2]);
  });
});

describe('the limit counts the bytes as written, to the byte', () => {
  it('answers a conversation written in exactly the limit, on /graphql and the legacy load', async () => {
    const answer = await post(gateway, `{ conversation(number: ${AT_THE_LIMIT}) { name model ${MESSAGES} } }`);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ data: { conversation: { name: NAME, model: MODEL, messages: [{ role: 'user', content: fitting }] } } });
    const load = await legacyLoad(gateway, AT_THE_LIMIT);
    expect(JSON.parse(load.text)).toMatchObject({ status: true, data: { message: [{ role: 'user', content: fitting }] } });
  });

  it('refuses one a single escaped quote longer, though its stored text is shorter than the limit', async () => {
    expect(Buffer.byteLength(onePast)).toBeLessThan(LIMIT);
    const answer = await post(gateway, `{ conversation(number: ${PAST_THE_LIMIT}) { ${MESSAGES} } }`);
    expect({ status: answer.status, error: firstError(answer.body) }).toEqual({ status: 400, error: refusal });
    expect(await legacyLoad(gateway, PAST_THE_LIMIT)).toMatchObject({ text: legacyRefusal });
  });
});
