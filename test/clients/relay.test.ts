import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { createClient } from 'graphql-ws';
import {
  commitMutation,
  type ConcreteRequest,
  createOperationDescriptor,
  Environment,
  type FetchFunction,
  fetchQuery,
  getPaginationMetadata,
  getPaginationVariables,
  getSelector,
  type GraphQLResponse,
  Network,
  Observable,
  type ReaderFragment,
  RecordSource,
  requestSubscription,
  type SingularReaderSelector,
  Store,
  type SubscribeFunction,
  type Variables,
} from 'relay-runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';

import { subscriptionsRunning } from '../subscriptions/helpers.js';
import { graphql, startTestGateway, type TestGateway } from '../support/gateway.js';

/** The Relay app: relay.config.json, and the documents under app/ that relay-compiler turns into artifacts. */
const APP = new URL('./relay/', import.meta.url);
const ALICE = 1;
const BOB = 2;

/** The side bar's fragment data, as ConversationList_query's artifact types it. */
interface SideBar {
  conversations: {
    __id: string;
    totalCount: number;
    pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
    edges: { node: { id: string; number: number } | null }[];
  };
}

let gateway: TestGateway;
let authorization: string;
let compiled: { stdout: string; stderr: string };
/** The operations the app sent over HTTP, in order, each with the variables it sent. */
const sent: { name: string; variables: Variables }[] = [];

/** An artifact relay-compiler wrote, loaded as a Babel-compiled `graphql` tag would load it. */
async function artifact<T>(name: string): Promise<T> {
  const module = (await import(new URL(`app/__generated__/${name}.graphql.ts`, APP).href)) as { default: T };
  return module.default;
}

beforeAll(async () => {
  // relay-compiler's npm package carries its binary: run it as a developer would, in the app's folder.
  const compiler = fileURLToPath(new URL('../../node_modules/.bin/relay-compiler', import.meta.url));
  [compiled, gateway] = await Promise.all([promisify(execFile)(compiler, [], { cwd: fileURLToPath(APP) }), startTestGateway()]);
  await gateway.seed({
    users: [
      { id: ALICE, username: 'alice', quota: 1 },
      { id: BOB, username: 'bob', quota: 1 },
    ],
    conversations: [
      ...Array.from({ length: 12 }, (_, index) => ({
        userId: ALICE,
        id: index + 1,
        name: `Alice ${index + 1}`,
        model: 'gpt-4o',
        messages: [],
      })),
      { userId: BOB, id: 5, name: 'Bob 5', model: 'gpt-4o', messages: [] },
    ],
  });
  authorization = `Bearer ${await gateway.token(ALICE)}`;
}, 120_000);

afterAll(() => gateway?.stop());

const fetchFunction: FetchFunction = async (request, variables) => {
  sent.push({ name: request.name, variables });
  const response = await fetch(`${gateway.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization },
    body: JSON.stringify({ query: request.text, variables, operationName: request.name }),
  });
  return (await response.json()) as GraphQLResponse;
};

/**
 * Runs `use` with Relay's default Environment, configured with nothing but how to reach the
 * gateway (HTTP and graphql-ws), then closes its socket.
 */
async function withDefaultEnvironment(use: (environment: Environment) => Promise<void>): Promise<void> {
  const sockets = createClient({
    url: `${gateway.url.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { Authorization: authorization },
  });
  const subscribe: SubscribeFunction = (request, variables) =>
    Observable.create<GraphQLResponse>((sink) =>
      sockets.subscribe(
        { query: request.text!, variables, operationName: request.name },
        {
          next: (value) => sink.next(value as GraphQLResponse),
          error: (error) => sink.error(error as Error),
          complete: () => sink.complete(),
        },
      ),
    );
  try {
    await use(new Environment({ network: Network.create(fetchFunction, subscribe), store: new Store(new RecordSource()) }));
  } finally {
    await sockets.dispose();
  }
}

/** A screen of the app: its query, and the paginated fragment on Query that it spreads. */
interface Screen {
  query: string;
  fragment: string;
}
const SIDE_BAR: Screen = { query: 'AppQuery', fragment: 'ConversationList_query' };
/** The side bar opened at a link, whose count argument has a default of 10. */
const HISTORY: Screen = { query: 'AppHistoryQuery', fragment: 'ConversationHistory_query' };

/**
 * The side bar as usePaginationFragment runs it, with relay-runtime alone: the screen's query, then
 * each page fetched with the pagination query relay-compiler made and merged by the store's
 * connection handler, the fragment read from the store after each.
 */
async function sideBar(environment: Environment, variables: Variables, screen: Screen = SIDE_BAR) {
  const [query, fragment] = await Promise.all([artifact<ConcreteRequest>(screen.query), artifact<ReaderFragment>(screen.fragment)]);
  await fetchQuery(environment, query, variables).toPromise();
  const root = environment.lookup(createOperationDescriptor(query, variables).fragment).data;
  const selector = getSelector(fragment, root) as SingularReaderSelector;
  const read = () => environment.lookup(selector).data as unknown as SideBar;
  const metadata = getPaginationMetadata(fragment, 'usePaginationFragment');
  return {
    read,
    numbers: () => read().conversations.edges.map((edge) => edge.node?.number),
    async load(direction: 'forward' | 'backward', count: number) {
      const { pageInfo } = read().conversations;
      const cursor = direction === 'forward' ? pageInfo.endCursor : pageInfo.startCursor;
      const pageVariables = getPaginationVariables(direction, count, cursor, selector.owner.variables, {}, metadata.paginationMetadata);
      await fetchQuery(environment, metadata.paginationRequest, pageVariables).toPromise();
    },
  };
}

describe('a Relay app', () => {
  it("compiles with relay-compiler's default configuration against the schema folder", async () => {
    expect(compiled.stderr + compiled.stdout).toMatch(/Compilation completed/);
    const refetch = await artifact<ConcreteRequest>('ConversationItemRefetchQuery');
    expect(refetch.params.text).toMatch(/node\(id: \$id\)/);
    const config = JSON.parse(await readFile(new URL('relay.config.json', APP), 'utf8'));
    expect(config.projects.app).toEqual({ schemaDir: '../../../schema', language: 'typescript' });
  });

  it('pages forward, each page merged into the one connection, with the pagination query relay-compiler made', () =>
    withDefaultEnvironment(async (environment) => {
      const list = await sideBar(environment, { first: 5 });
      expect(list.numbers()).toEqual([12, 11, 10, 9, 8]);
      expect(list.read().conversations.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
      await list.load('forward', 5);
      await list.load('forward', 5);
      expect(list.numbers()).toEqual([12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1]);
      expect(list.read().conversations).toMatchObject({ totalCount: 12, pageInfo: { hasNextPage: false } });
      expect(sent.slice(-3).map(({ name }) => name)).toEqual([
        'AppQuery',
        'ConversationListPaginationQuery',
        'ConversationListPaginationQuery',
      ]);
    }));

  it('pages backward from the oldest, each page put before the last', () =>
    withDefaultEnvironment(async (environment) => {
      const list = await sideBar(environment, { last: 3 });
      expect(list.numbers()).toEqual([3, 2, 1]);
      expect(list.read().conversations.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: true });
      await list.load('backward', 4);
      expect(list.numbers()).toEqual([7, 6, 5, 4, 3, 2, 1]);
      await list.load('backward', 10);
      expect(list.numbers()).toEqual([12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1]);
      expect(list.read().conversations.pageInfo).toMatchObject({ hasPreviousPage: false });
    }));

  it('pages back with loadPrevious from a screen opened at a link, its count argument defaulting to 10', () =>
    withDefaultEnvironment(async (environment) => {
      const link = await graphql(gateway, '{ conversations(first: 4) { pageInfo { endCursor } } }', { authorization });
      const list = await sideBar(environment, { after: link.body.data.conversations.pageInfo.endCursor }, HISTORY);
      expect(list.numbers()).toEqual([8, 7, 6, 5, 4, 3, 2, 1]);
      expect(list.read().conversations.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: true });
      await list.load('backward', 2);
      expect(list.numbers()).toEqual([10, 9, 8, 7, 6, 5, 4, 3, 2, 1]);
      expect(list.read().conversations.pageInfo).toMatchObject({ hasPreviousPage: true });
      await list.load('backward', 2);
      expect(list.numbers()).toEqual([12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1]);
      expect(list.read().conversations.pageInfo).toMatchObject({ hasPreviousPage: false });
      // relay-runtime put the default in place of the null it gave `first`: both counts went out.
      expect(sent.at(-1)).toMatchObject({ name: 'ConversationHistoryPaginationQuery', variables: { first: 10, after: null, last: 2 } });
    }));

  it('refetches a conversation through node with the refetch query of its @refetchable fragment', () =>
    withDefaultEnvironment(async (environment) => {
      const list = await sideBar(environment, { first: 3 });
      const eleven = list.read().conversations.edges[1]!.node!;
      const [refetch, item] = await Promise.all([
        artifact<ConcreteRequest>('ConversationItemRefetchQuery'),
        artifact<ReaderFragment>('ConversationItem_conversation'),
      ]);
      const row = getSelector(item, eleven) as SingularReaderSelector;
      expect(environment.lookup(row).data).toMatchObject({ number: 11, name: 'Alice 11' });

      // Renamed by another client: the legacy web client, over REST.
      const renamed = await fetch(`${gateway.url}/conversation/rename`, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json' },
        body: JSON.stringify({ id: 11, name: 'Renamed elsewhere' }),
      });
      expect(await renamed.json()).toEqual({ status: true, message: '' });
      await fetchQuery(environment, refetch, { id: eleven.id }).toPromise();
      expect(environment.lookup(row).data).toMatchObject({ id: eleven.id, number: 11, name: 'Renamed elsewhere' });
      expect(sent.at(-1)?.name).toBe('ConversationItemRefetchQuery');
    }));

  it("deletes with @deleteRecord, which removes the conversation's record from the store", () =>
    withDefaultEnvironment(async (environment) => {
      const list = await sideBar(environment, { first: 3 });
      const twelve = list.read().conversations.edges[0]!.node!;
      const source = () => environment.getStore().getSource();
      expect(source().get(twelve.id)).toMatchObject({ number: 12 });
      const mutation = await artifact<ConcreteRequest>('DeleteConversationMutation');
      const response = await new Promise((resolve, reject) =>
        commitMutation(environment, { mutation, variables: { id: twelve.id }, onCompleted: resolve, onError: reject }),
      );
      expect(response).toEqual({ deleteConversation: { ok: true, error: null, deletedConversationId: twelve.id } });
      expect(source().get(twelve.id)).toBeNull();
      expect(list.read().conversations.edges[0]!.node).toBeNull();
      const load = await fetch(`${gateway.url}/conversation/load?id=12`, { headers: { authorization } });
      expect(await load.json()).toEqual({ status: false, message: 'conversation not found' });
    }));

  it('keeps the connection current from subscription events alone: @prependNode and @deleteEdge', () =>
    withDefaultEnvironment(async (environment) => {
      const list = await sideBar(environment, { first: 3 });
      expect(list.numbers()).toEqual([11, 10, 9]);
      const subscription = await artifact<ConcreteRequest>('ConversationEventsSubscription');
      const events: unknown[] = [];
      let arrived: () => void = () => {};
      const running = await subscriptionsRunning(gateway.url);
      const disposable = requestSubscription(environment, {
        subscription,
        variables: { connections: [list.read().conversations.__id] },
        onNext: (response) => {
          events.push(response);
          arrived();
        },
      });
      await expect.poll(() => subscriptionsRunning(gateway.url), { timeout: 5_000, interval: 20 }).toBeGreaterThan(running);
      const next = (write: () => Promise<unknown>) =>
        new Promise<void>((resolve, reject) => {
          arrived = resolve;
          write().catch(reject);
        });

      // Created by the chat service, straight into the database.
      await next(() =>
        gateway.models.conversations.create({ userId: ALICE, id: 13, name: 'New chat', model: 'gpt-4o', enableWeb: false, messages: [] }),
      );
      expect(list.numbers()).toEqual([13, 11, 10, 9]);

      // Renamed: updated where it is, not listed twice.
      await next(() => graphql(gateway, 'mutation { renameConversationByNumber(number: 10, name: "Ten") { ok } }', { authorization }));
      expect(list.numbers()).toEqual([13, 11, 10, 9]);
      const ten = list.read().conversations.edges[2]!.node!;
      expect(environment.getStore().getSource().get(ten.id)).toMatchObject({ name: 'Ten' });

      // Deleted over REST: taken out of the connection.
      await next(() => fetch(`${gateway.url}/conversation/delete?id=13`, { headers: { authorization } }));
      expect(list.numbers()).toEqual([11, 10, 9]);
      expect(events).toHaveLength(3);
      disposable.dispose();
    }));
});
