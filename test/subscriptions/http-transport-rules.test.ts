import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { createClient as createSseClient, type RequestParams } from 'graphql-sse';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { documentIdOf } from '../../src/operations/documents.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { connectAs } from '../support/websocket.js';
import { Received } from './helpers.js';

/**
 * What CONTRACT §7 asks of the HTTP subscription transports: the same trusted documents, the same
 * errors naming their request, the same shutdown and bounds as the WebSocket.
 */

const SEED = {
  users: [{ id: 1, username: 'alice', quota: 12.5 }],
  conversations: [{ userId: 1, id: 1, name: 'Trip plan', model: 'gpt-4o', enableWeb: false, messages: [] }],
};
const LIVE_BALANCE = 'subscription LiveBalance { quota }';
/** What Apollo Client's HttpLink sends as `Accept` for a subscription. */
const MULTIPART_ACCEPT = 'multipart/mixed;boundary="graphql";subscriptionSpec=1.0,application/graphql-response+json,application/json;q=0.9';

const TRANSPORTS = ['websocket', 'sse, distinct connections', 'sse, a single connection', 'sse, GET', 'multipart'] as const;
type Transport = (typeof TRANSPORTS)[number];

/** A subscribe payload as a client sends it: a text, or a trusted document's id beside the empty text. */
type Payload = RequestParams & { documentId?: string };

/** A subscription's first answer as a GraphQL result; a refusal in a transport's own form (an `error` message, an HTTP 400) as its errors. */
type Answer = { data?: unknown; errors?: unknown };

/** Subscribes with `payload` over `transport`, as that transport's clients do, and answers the first result; then lets it go. */
async function firstAnswer(gateway: TestGateway, transport: Transport, payload: Payload): Promise<Answer> {
  const authorization = `Bearer ${await gateway.token(1)}`;
  if (transport === 'websocket') {
    const socket = await connectAs(gateway.url, authorization);
    const { query, ...rest } = payload;
    const reply = await socket.subscribe(query, undefined, rest).next();
    await socket.close();
    return reply.type === 'error' ? { errors: reply.payload } : (reply.payload as Answer);
  }
  if (transport === 'multipart') return firstMultipartAnswer(gateway, authorization, payload);
  if (transport === 'sse, GET') return firstSseAnswerOverGet(gateway, authorization, payload);
  const client = createSseClient({
    url: `${gateway.url}/graphql/stream`,
    headers: { authorization },
    singleConnection: transport === 'sse, a single connection',
    retryAttempts: 0,
  });
  const received = new Received();
  client.subscribe(payload, received.sink);
  const [answer] = await received.first(1);
  client.dispose();
  return answer!;
}

/** Apollo's multipart subscription over `fetch`: the first part's payload, or an answer that is not multipart, as it is. */
async function firstMultipartAnswer(gateway: TestGateway, authorization: string, payload: Payload): Promise<Answer> {
  const response = await fetch(`${gateway.url}/graphql`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json', accept: MULTIPART_ACCEPT },
    body: JSON.stringify(payload),
  });
  if (!response.headers.get('content-type')?.startsWith('multipart/mixed')) {
    // Refused as `/graphql` refuses it, in the media type Apollo Client reads the errors of a 400 from.
    expect([response.status, response.headers.get('content-type')]).toEqual([400, 'application/graphql-response+json; charset=utf-8']);
    return (await response.json()) as Answer;
  }
  // A part is whole once the delimiter after it has come; heartbeats (`{}`) are skipped.
  return (JSON.parse(await firstMatch(response, /\r\n\r\n(\{"payload":.*?)\r\n--graphql/s)) as { payload: Answer }).payload;
}

/** The protocol's distinct-connection GET, with the request's parameters in the URL (what an EventSource could send). */
async function firstSseAnswerOverGet(
  gateway: TestGateway,
  authorization: string,
  { query, documentId, extensions }: Payload,
): Promise<Answer> {
  const parameters = new URLSearchParams({
    query,
    ...(documentId && { documentId }),
    ...(extensions && { extensions: JSON.stringify(extensions) }),
  });
  const response = await fetch(`${gateway.url}/graphql/stream?${parameters}`, { headers: { authorization, accept: 'text/event-stream' } });
  expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
  return JSON.parse(await firstMatch(response, /event: next\ndata: (.*)\n\n/)) as Answer;
}

/** The first group of `pattern` in `response`'s body, as soon as it has come; the rest is not read. */
async function firstMatch(response: Response, pattern: RegExp): Promise<string> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  try {
    for (let match = pattern.exec(text); ; match = pattern.exec(text)) {
      if (match) return match[1]!;
      const { value, done } = await reader.read();
      if (done) throw new Error(`the answer ended without ${pattern}: ${JSON.stringify(text)}`);
      text += value;
    }
  } finally {
    await reader.cancel();
  }
}

describe('trusted documents, over every transport alike', () => {
  let open: TestGateway;
  let only: TestGateway;

  beforeAll(async () => {
    const file = join(await mkdtemp(join(tmpdir(), 'trusted-subscriptions-')), 'documents.json');
    await writeFile(file, JSON.stringify({ [documentIdOf(LIVE_BALANCE)]: LIVE_BALANCE }));
    open = await startTestGateway({ PERSISTED_DOCUMENTS: file });
    only = await startTestGateway({ PERSISTED_DOCUMENTS: file, PERSISTED_DOCUMENTS_ONLY: 'true' }, { database: open.testDatabase });
    await open.seed(SEED);
  });
  afterAll(async () => {
    await only?.stop();
    await open?.stop();
  });

  it.each(TRANSPORTS)('over %s, run a subscription named by documentId or persisted-query hash', async (transport) => {
    const id = documentIdOf(LIVE_BALANCE);
    for (const gateway of [open, only]) {
      expect(await firstAnswer(gateway, transport, { query: '', documentId: id })).toEqual({ data: { quota: 12.5 } });
      const byHash = { query: '', extensions: { persistedQuery: { version: 1, sha256Hash: id } } };
      expect(await firstAnswer(gateway, transport, byHash)).toEqual({ data: { quota: 12.5 } });
    }
  });

  it.each(TRANSPORTS)('over %s, answer PERSISTED_QUERY_NOT_FOUND for an id no trusted document has', async (transport) => {
    const unknown = documentIdOf('subscription { quota }');
    for (const gateway of [open, only]) {
      expect(await firstAnswer(gateway, transport, { query: '', documentId: unknown })).toEqual({
        errors: [{ message: 'PersistedQueryNotFound: no trusted document has this id', extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } }],
      });
    }
  });

  it.each(TRANSPORTS)('over %s, refuse a document text where only trusted documents run, even a trusted one’s', async (transport) => {
    for (const query of [LIVE_BALANCE, 'subscription { quota }']) {
      expect(await firstAnswer(only, transport, { query })).toEqual({
        errors: [
          {
            message: 'PersistedQueryOnly: this endpoint runs trusted documents only; send their documentId instead of a query',
            extensions: { code: 'PERSISTED_QUERY_ONLY' },
          },
        ],
      });
    }
    expect(await firstAnswer(open, transport, { query: LIVE_BALANCE })).toEqual({ data: { quota: 12.5 } });
  });
});
