import { print } from 'graphql';

import { ListConversationsDocument, LoadConversationDocument, QuotaDocument } from '../../src/rest/generated/operations.js';
import { KNOWN_CONVERSATION_ID } from './dataset.js';

export const SCENARIO_NAMES = [
  'rest_list',
  'graphql_list',
  'baseline_list',
  'floor_list',
  'express_floor_list',
  'apollo_list',
  'mercurius_list',
  'yoga_list',
  'rest_load',
  'graphql_load',
  'baseline_load',
  'floor_load',
  'express_floor_load',
  'apollo_load',
  'mercurius_load',
  'yoga_load',
  'graphql_page_messages',
  'rest_quota',
  'graphql_quota',
] as const;
export type ScenarioName = (typeof SCENARIO_NAMES)[number];

/**
 * Which process answers: the gateway, or one of its peers on the same database — the hand-written
 * Express + Mongoose baseline, the bare `node:http` + driver floor, the same reads behind Express
 * alone (the Express floor), Apollo Server with its defaults, and the two fastest Node GraphQL
 * servers with graphql-jit: Mercurius (Fastify) and GraphQL Yoga.
 */
export type Target = 'gateway' | 'baseline' | 'floor' | 'express_floor' | 'apollo' | 'mercurius' | 'yoga';
export const TARGETS: readonly Target[] = ['gateway', 'baseline', 'floor', 'express_floor', 'apollo', 'mercurius', 'yoga'];

export interface Scenario {
  name: ScenarioName;
  target: Target;
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** Database commands one request must cost (gateway scenarios). */
  commands?: number;
}

/** The page of 100 with message bodies: conversations in one read, all their messages in one batched read. */
const PAGE_WITH_MESSAGES = `query PageWithMessages {
  conversations(first: 100) {
    nodes {
      id
      name
      messages {
        role
        content
      }
    }
  }
}`;

/** The same operation text the REST route runs (it prints the same document), so both share one cached document. */
function graphqlBody(query: string, operationName: string, variables?: Record<string, unknown>): string {
  return JSON.stringify({ query, operationName, ...(variables ? { variables } : {}) });
}

/** The GraphQL peers' scenarios of a read, sent the gateway's own operation: Apollo's standalone server answers on `/`. */
function graphqlPeerScenarios(work: 'list' | 'load', headers: Record<string, string>, body: string): Scenario[] {
  return (['apollo', 'mercurius', 'yoga'] as const).map((target) => ({
    name: `${target}_${work}`,
    target,
    method: 'POST',
    path: target === 'apollo' ? '/' : '/graphql',
    headers,
    body,
  }));
}

export function scenarios(token: string): Scenario[] {
  const auth = { authorization: `Bearer ${token}` };
  const post = { ...auth, 'content-type': 'application/json' };
  const load = `/conversation/load?id=${KNOWN_CONVERSATION_ID}`;
  const graphqlList = graphqlBody(print(ListConversationsDocument), 'ListConversations');
  const graphqlLoad = graphqlBody(print(LoadConversationDocument), 'LoadConversation', { id: KNOWN_CONVERSATION_ID });
  return [
    { name: 'rest_list', target: 'gateway', method: 'GET', path: '/conversation/list', headers: auth, commands: 1 },
    {
      name: 'graphql_list',
      target: 'gateway',
      method: 'POST',
      path: '/graphql',
      headers: post,
      body: graphqlList,
      commands: 1,
    },
    { name: 'baseline_list', target: 'baseline', method: 'GET', path: '/conversation/list', headers: auth },
    { name: 'floor_list', target: 'floor', method: 'GET', path: '/conversation/list', headers: auth },
    { name: 'express_floor_list', target: 'express_floor', method: 'GET', path: '/conversation/list', headers: auth },
    ...graphqlPeerScenarios('list', post, graphqlList),
    { name: 'rest_load', target: 'gateway', method: 'GET', path: load, headers: auth, commands: 1 },
    {
      name: 'graphql_load',
      target: 'gateway',
      method: 'POST',
      path: '/graphql',
      headers: post,
      body: graphqlLoad,
      commands: 1,
    },
    { name: 'baseline_load', target: 'baseline', method: 'GET', path: load, headers: auth },
    { name: 'floor_load', target: 'floor', method: 'GET', path: load, headers: auth },
    { name: 'express_floor_load', target: 'express_floor', method: 'GET', path: load, headers: auth },
    ...graphqlPeerScenarios('load', post, graphqlLoad),
    {
      name: 'graphql_page_messages',
      target: 'gateway',
      method: 'POST',
      path: '/graphql',
      headers: post,
      body: graphqlBody(PAGE_WITH_MESSAGES, 'PageWithMessages'),
      commands: 2,
    },
    { name: 'rest_quota', target: 'gateway', method: 'GET', path: '/quota', headers: auth, commands: 1 },
    {
      name: 'graphql_quota',
      target: 'gateway',
      method: 'POST',
      path: '/graphql',
      headers: post,
      body: graphqlBody(print(QuotaDocument), 'Quota'),
      commands: 1,
    },
  ];
}

export interface Answer {
  status: number;
  contentType: string | null;
  text: string;
}

export async function call(base: string, scenario: Scenario): Promise<Answer> {
  const response = await fetch(`${base}${scenario.path}`, { method: scenario.method, headers: scenario.headers, body: scenario.body });
  return { status: response.status, contentType: response.headers.get('content-type'), text: await response.text() };
}
