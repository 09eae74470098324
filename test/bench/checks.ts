import { deepStrictEqual, equal, ok } from 'node:assert/strict';

import { type Answer, call, type Scenario, type ScenarioName, type Target } from './scenarios.js';

/**
 * Before anything is measured: every scenario answers 200 with the expected
 * data, the hand-written baseline's and both floors' bodies are byte-identical to
 * the gateway's REST bodies (same bytes, same content type), and the GraphQL peers'
 * answers to the same operations (Apollo Server, Mercurius, GraphQL Yoga) are
 * byte-identical to the gateway's GraphQL answers.
 */
export async function checkAnswers(all: readonly Scenario[], bases: Record<Target, string>): Promise<void> {
  const answers = new Map<ScenarioName, Answer>();
  for (const scenario of all) {
    const answer = await call(bases[scenario.target], scenario);
    equal(answer.status, 200, `${scenario.name} answered ${answer.status}: ${answer.text.slice(0, 300)}`);
    answers.set(scenario.name, answer);
  }
  const json = (name: ScenarioName) => JSON.parse(answers.get(name)!.text);

  const same = (peer: ScenarioName, gateway: ScenarioName) => {
    const expected = answers.get(gateway)!;
    const answer = answers.get(peer)!;
    ok(
      answer.text === expected.text,
      `${peer} body differs from ${gateway}:\n  gateway: ${expected.text.slice(0, 200)}\n  ${peer}: ${answer.text.slice(0, 200)}`,
    );
    equal(answer.contentType, expected.contentType, `${peer} content type differs from ${gateway}`);
  };
  for (const work of ['list', 'load'] as const) {
    same(`baseline_${work}`, `rest_${work}`);
    same(`floor_${work}`, `rest_${work}`);
    same(`express_floor_${work}`, `rest_${work}`);
    same(`apollo_${work}`, `graphql_${work}`);
    same(`mercurius_${work}`, `graphql_${work}`);
    same(`yoga_${work}`, `graphql_${work}`);
  }

  const list = json('rest_list');
  equal(list.status, true);
  equal(list.data.length, 100, 'the list has 100 conversations');
  const graphqlList = json('graphql_list');
  equal(graphqlList.errors, undefined, `graphql_list failed: ${JSON.stringify(graphqlList.errors)}`);
  deepStrictEqual(
    graphqlList.data.conversations.nodes.map((node: Record<string, unknown>) => node.number),
    list.data.map((item: Record<string, unknown>) => item.id),
    'GraphQL and REST list the same conversations',
  );

  const load = json('rest_load');
  equal(load.status, true);
  equal(load.data.message.length, 20, 'the known conversation has 20 messages');
  const graphqlLoad = json('graphql_load');
  deepStrictEqual(graphqlLoad.data.conversation.messages, load.data.message, 'GraphQL and REST load the same messages');

  const page = json('graphql_page_messages');
  equal(page.errors, undefined, `graphql_page_messages failed: ${JSON.stringify(page.errors)}`);
  equal(page.data.conversations.nodes.length, 100);
  ok(
    page.data.conversations.nodes.every((node: { messages: unknown[] }) => node.messages.length > 0),
    'every conversation has messages',
  );

  equal(json('graphql_quota').data.quota, json('rest_quota').quota, 'GraphQL and REST report the same quota');
}
