import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { ApolloClient, type ApolloLink, gql, HttpLink, InMemoryCache } from '@apollo/client';
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { buildSchema } from '../../src/graphql/schema.js';
import { Documents } from '../../src/operations/documents.js';
import { json, postGraphql, send } from '../security/http.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';

const ALICE = 1;
const SEED = {
  users: [{ id: ALICE, username: 'alice', quota: 12.5 }],
  conversations: [{ userId: ALICE, id: 1, name: 'Trip plan', model: 'gpt-4o', messages: [] }],
};
const QUOTA = 'query Quota { quota }';
const NAME = 'query Name($number: Int!) { conversation(number: $number) { name } }';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

let gateway: TestGateway;
let only: TestGateway;
let directory: string;
let alice: string;

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'persisted-queries-'));
  const file = join(directory, 'persisted-documents.json');
  await writeFile(file, JSON.stringify({ [sha256(QUOTA)]: QUOTA }));
  gateway = await startTestGateway();
  only = await startTestGateway({ PERSISTED_DOCUMENTS: file, PERSISTED_DOCUMENTS_ONLY: 'true' }, { database: gateway.testDatabase });
  await gateway.seed(SEED);
  alice = `Bearer ${await gateway.token(ALICE)}`;
});
afterAll(async () => {
  await only?.stop();
  await gateway?.stop();
  await rm(directory, { recursive: true, force: true });
});

interface Sent {
  method: string;
  /** Whether the request carried the document's text. */
  withText: boolean;
}

/** Apollo Client as an app builds it, optionally behind the persisted-query link (what `createPersistedQueryLink` makes), counting its requests. */
function client(options: { persisted: boolean; useGET?: boolean; url?: string }) {
  const sent: Sent[] = [];
  const http = new HttpLink({
    uri: `${options.url ?? gateway.url}/graphql`,
    headers: { authorization: alice },
    fetch: async (input, init) => {
      const url = new URL(String(input));
      const method = init?.method ?? 'GET';
      const withText = method === 'GET' ? url.searchParams.has('query') : 'query' in JSON.parse(String(init?.body));
      sent.push({ method, withText });
      return fetch(input, init);
    },
  });
  const link: ApolloLink = options.persisted
    ? new PersistedQueryLink({ sha256, useGETForHashedQueries: options.useGET ?? false }).concat(http)
    : http;
  return { sent, apollo: new ApolloClient({ link, cache: new InMemoryCache() }) };
}

async function ask(apollo: ApolloClient, text: string, variables?: Record<string, unknown>) {
  return (await apollo.query({ query: gql(text), variables, fetchPolicy: 'network-only' })).data;
}

describe('automatic persisted queries (Apollo’s protocol, as its persisted-query link speaks it)', () => {
  it('take two requests the first time an operation is sent, then one each: the text is registered', async () => {
    const { sent, apollo } = client({ persisted: true });
    expect(await ask(apollo, NAME, { number: 1 })).toEqual({ conversation: { __typename: 'Conversation', name: 'Trip plan' } });
    expect(sent).toEqual([
      { method: 'POST', withText: false },
      { method: 'POST', withText: true },
    ]);
    for (let round = 0; round < 3; round++) await ask(apollo, NAME, { number: 1 });
    expect(sent).toHaveLength(5);
    expect(sent.slice(2).every((request) => !request.withText)).toBe(true);
    // Another client (another browser) finds it registered too.
    const other = client({ persisted: true });
    await ask(other.apollo, NAME, { number: 1 });
    expect(other.sent).toEqual([{ method: 'POST', withText: false }]);
  });

  it('run a registered hash over GET, with the hash alone', async () => {
    const text = 'query QuotaOverGet { quota }';
    const { sent, apollo } = client({ persisted: true, useGET: true });
    expect(await ask(apollo, text)).toEqual({ quota: 12.5 });
    expect(await ask(apollo, text)).toEqual({ quota: 12.5 });
    expect(sent.at(-1)).toEqual({ method: 'GET', withText: false });
    expect(sent.length).toBe(3);
  });

  it('cost one request per operation without the link, each carrying its text', async () => {
    const plain = client({ persisted: false });
    for (let round = 0; round < 3; round++) await ask(plain.apollo, 'query PlainQuota { quota }');
    expect(plain.sent).toHaveLength(3);
    expect(plain.sent.every((request) => request.withText)).toBe(true);
  });

  it('answer PERSISTED_QUERY_NOT_FOUND for a hash never registered, and 400 for a text that is not its hash’s', async () => {
    const unknown = { extensions: { persistedQuery: { version: 1, sha256Hash: sha256('query Never { quota }') } } };
    const notFound = await postGraphql(gateway.url, unknown, { authorization: alice });
    expect(json(notFound).errors[0]).toMatchObject({
      message: 'PersistedQueryNotFound',
      extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' },
    });
    expect(notFound.headers['cache-control']).toBe('no-store');
    const hijack = { query: '{ quota }', extensions: { persistedQuery: { version: 1, sha256Hash: sha256(NAME) } } };
    const mismatch = await postGraphql(gateway.url, hijack, { authorization: alice });
    expect(mismatch.status).toBe(400);
    expect(json(mismatch).errors[0].message).toBe('provided sha does not match query');
  });

  it('register nothing where only trusted documents run (PERSISTED_DOCUMENTS_ONLY=true)', async () => {
    const text = 'query NotTrusted { quota }';
    const extensions = { persistedQuery: { version: 1, sha256Hash: sha256(text) } };
    const withText = await postGraphql(only.url, { query: text, extensions }, { authorization: alice });
    expect([withText.status, json(withText).errors[0].extensions.code]).toEqual([400, 'PERSISTED_QUERY_ONLY']);
    // Run on the open gateway, the text is held in that process; here it stays unknown.
    const hashAlone = await postGraphql(only.url, { extensions }, { authorization: alice });
    expect(json(hashAlone).errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    const trusted = await send(only.url, {
      path: `/graphql?extensions=${encodeURIComponent(JSON.stringify({ persistedQuery: { version: 1, sha256Hash: sha256(QUOTA) } }))}`,
      headers: { authorization: alice },
    });
    expect(json(trusted)).toEqual({ data: { quota: 12.5 } });
  });
});

describe('automatic persisted queries for subscriptions', () => {
  /** The first event of a multipart subscription, asked for as Apollo Client's `HttpLink` asks. */
  async function firstMultipartEvent(body: unknown): Promise<string> {
    const controller = new AbortController();
    const answer = await fetch(`${gateway.url}/graphql`, {
      method: 'POST',
      headers: {
        authorization: alice,
        'content-type': 'application/json',
        accept: 'multipart/mixed;boundary="graphql";subscriptionSpec=1.0,application/json',
      },
      body: JSON.stringify(body),
      signal: controller.signal,
    });
    const reader = answer.body!.getReader();
    let text = '';
    while (!/"(payload|errors)"/.test(text)) text += new TextDecoder().decode((await reader.read()).value);
    controller.abort();
    return text;
  }

  it('run a registered hash alone over multipart and Server-Sent Events, as the link sends it', async () => {
    const text = 'subscription Balance { quota }';
    const extensions = { persistedQuery: { version: 1, sha256Hash: sha256(text) } };
    expect(await firstMultipartEvent({ extensions })).toContain('PERSISTED_QUERY_NOT_FOUND');
    expect(await firstMultipartEvent({ query: text, extensions })).toContain('{"payload":{"data":{"quota":12.5}}}');
    expect(await firstMultipartEvent({ extensions })).toContain('{"payload":{"data":{"quota":12.5}}}');
    const controller = new AbortController();
    const sse = await fetch(`${gateway.url}/graphql/stream`, {
      method: 'POST',
      headers: { authorization: alice, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ query: '', extensions }),
      signal: controller.signal,
    });
    const reader = sse.body!.getReader();
    let events = '';
    while (!events.includes('data:')) events += new TextDecoder().decode((await reader.read()).value);
    controller.abort();
    expect(events).toContain('data: {"data":{"quota":12.5}}');
  });
});

describe('the store of registered texts', () => {
  it('is the document cache, bounded in bytes: the least recently used texts are let go', async () => {
    const documents = new Documents(buildSchema());
    // 35 000 characters of comment each, 105 000 bytes in UTF-8: 45 of them hold less than 4 Mi
    // characters, more than the 4 MiB the cache holds.
    const texts = Array.from({ length: 45 }, (_, index) => `# ${String(index).padStart(2, '0')}${'€'.repeat(35_000)}\n{ quota }`);
    for (const text of texts) documents.document(text);
    expect(await documents.registered.get(`apq:${sha256(texts[0]!)}`)).toBeUndefined();
    expect(await documents.registered.get(`apq:${sha256(texts[44]!)}`)).toBe(texts[44]);
  });
});
