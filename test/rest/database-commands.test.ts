import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { graphql, startTestGateway, type TestGateway } from '../support/gateway.js';

let gateway: TestGateway;
let token: string;

beforeAll(async () => {
  gateway = await startTestGateway();
  await gateway.seed({
    users: [{ id: 1, username: 'alice', quota: 5 }],
    conversations: Array.from({ length: 120 }, (_, index) => ({
      userId: 1,
      id: index + 1,
      name: `Conversation ${index + 1}`,
      model: 'gpt-4o',
      enableWeb: false,
      messages: Array.from({ length: 20 }, (__, turn) => ({ role: turn % 2 ? 'assistant' : 'user', content: `turn ${turn}` })),
    })),
  });
  token = await gateway.token(1);
});

afterAll(() => gateway?.stop());

async function restCommands(path: string, body?: string): Promise<string[]> {
  return gateway.commandsDuring(async () => {
    const response = await fetch(`${gateway.url}${path}`, {
      method: body ? 'POST' : 'GET',
      headers: { authorization: `Bearer ${token}` },
      body,
    });
    expect(((await response.json()) as { status: boolean }).status).toBe(true);
  });
}

describe('database commands per request', () => {
  it('lists conversations over REST with one command', async () => {
    expect(await restCommands('/conversation/list')).toEqual(['find']);
  });

  it('loads a conversation with its 20 messages over REST with one command', async () => {
    expect(await restCommands('/conversation/load?id=7')).toEqual(['find']);
  });

  it('reads the balance over REST with one command', async () => {
    expect(await restCommands('/quota')).toEqual(['find']);
  });

  it('renames a conversation over REST with one command', async () => {
    expect(await restCommands('/conversation/rename', '{"id":7,"name":"Seven"}')).toEqual(['findAndModify']);
  });

  it('reads a GraphQL page of 100 conversations with their messages with two commands', async () => {
    const commands = await gateway.commandsDuring(async () => {
      const { body } = await graphql(gateway, '{ conversations { nodes { id messages { content } } } }', {
        authorization: `Bearer ${token}`,
      });
      expect(body.data?.conversations.nodes).toHaveLength(100);
    });
    expect(commands).toEqual(['find', 'find']);
  });

  // Queries run interpreted the first time and compiled from the second: both are pinned.
  it.each([
    ['lists conversations', '{ conversations(first: 100) { nodes { id userId name model enableWeb } } }'],
    ['loads a conversation with its 20 messages', '{ conversation(number: 7) { id name messages { role content } } }'],
    ['reads the balance', '{ quota }'],
  ])('%s over GraphQL with one command, on every run', async (_what, query) => {
    for (let run = 0; run < 3; run++) {
      const commands = await gateway.commandsDuring(async () => {
        const { body } = await graphql(gateway, query, { authorization: `Bearer ${token}` });
        expect(body.errors).toBeUndefined();
      });
      expect(commands).toEqual(['find']);
    }
  });

  // Last: it leaves nothing to read.
  it('cleans all conversations over REST with one command', async () => {
    expect(await restCommands('/conversation/clean')).toEqual(['delete']);
  });
});
