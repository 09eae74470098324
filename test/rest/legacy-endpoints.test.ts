import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { RunningSidecar } from '../../src/rest/sidecar.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { startTestSidecar } from '../support/sidecar.js';

const ALICE = 1;
const BOB = 2;
const CAROL = 3;
/** Renames and cleans, apart from the others' fixtures. */
const DAVE = 4;
const ERIN = 5;

const seed = {
  users: [
    { id: ALICE, username: 'alice', quota: 12.5 },
    { id: BOB, username: 'bob', quota: 0 },
    { id: CAROL, username: 'carol', quota: 1 },
    { id: DAVE, username: 'dave', quota: 0 },
    { id: ERIN, username: 'erin', quota: 0 },
  ],
  conversations: [
    {
      userId: ALICE,
      id: 1,
      name: 'Trip plan',
      model: 'gpt-4o',
      enableWeb: false,
      messages: [
        { role: 'system', content: 'You are helpful.' },
        { role: 'user', content: 'Plan a "trip" — to Zürich.' },
        { role: 'assistant', content: 'Sure.' },
      ],
    },
    { userId: ALICE, id: 2, name: 'Regex', model: 'gpt-4o-mini', enableWeb: true, messages: [] },
    { userId: BOB, id: 5, name: 'Bob’s', model: 'gpt-4o', enableWeb: false, messages: [{ role: 'user', content: 'hi' }] },
    { userId: DAVE, id: 1, name: 'Old name', model: 'gpt-4o', enableWeb: false, messages: [{ role: 'user', content: 'keep me' }] },
    { userId: DAVE, id: 2, name: 'Second', model: 'gpt-4o', enableWeb: true, messages: [] },
    { userId: ERIN, id: 3, name: 'Erin’s', model: 'gpt-4o', enableWeb: false, messages: [] },
    { userId: ERIN, id: 9, name: 'Erin’s newest', model: 'gpt-4o', enableWeb: false, messages: [] },
    ...Array.from({ length: 120 }, (_, index) => ({
      userId: CAROL,
      id: index + 1,
      name: `Carol ${index + 1}`,
      model: 'gpt-4o',
      enableWeb: false,
      messages: [],
    })),
  ],
};

interface Answer {
  status: number;
  contentType: string | null;
  text: string;
  headers: Headers;
}

/** Runs the same expectations against the built-in layer and against the sidecar in front of a gateway. */
describe.each(['in-process', 'sidecar'] as const)('legacy REST endpoints (%s)', (mode) => {
  let gateway: TestGateway;
  let sidecar: RunningSidecar | undefined;
  let base: string;
  const tokens: Record<number, string> = {};

  beforeAll(async () => {
    gateway = await startTestGateway();
    await gateway.seed(seed);
    if (mode === 'sidecar') sidecar = await startTestSidecar(`${gateway.url}/graphql`);
    base = sidecar?.url ?? gateway.url;
    for (const id of [ALICE, BOB, CAROL, DAVE, ERIN, 9]) tokens[id] = await gateway.token(id);
  });

  afterAll(async () => {
    await sidecar?.stop();
    await gateway?.stop();
  });

  async function call(path: string, init: { method?: string; user?: number; authorization?: string; body?: string } = {}): Promise<Answer> {
    const headers: Record<string, string> = {};
    const authorization = init.authorization ?? (init.user === undefined ? undefined : tokens[init.user]);
    if (authorization !== undefined) headers.authorization = authorization;
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${base}${path}`, { method: init.method ?? 'GET', headers, body: init.body });
    return {
      status: response.status,
      contentType: response.headers.get('content-type'),
      text: await response.text(),
      headers: response.headers,
    };
  }

  function expectBody(answer: Answer, status: number, text: string) {
    expect({ status: answer.status, text: answer.text }).toEqual({ status, text });
    expect(answer.contentType).toMatch(/^application\/json\b/);
  }

  describe('documented answers, byte for byte', () => {
    it('lists the caller’s conversations newest first with "message":null', async () => {
      expectBody(
        await call('/conversation/list', { user: ALICE }),
        200,
        '{"status":true,"message":"","data":[' +
          '{"id":2,"user_id":1,"name":"Regex","message":null,"model":"gpt-4o-mini","enable_web":true},' +
          '{"id":1,"user_id":1,"name":"Trip plan","message":null,"model":"gpt-4o","enable_web":false}]}',
      );
    });

    it('lists at most the 100 most recent conversations', async () => {
      const answer = await call('/conversation/list', { user: CAROL });
      const body = JSON.parse(answer.text);
      expect(body.data).toHaveLength(100);
      expect(body.data[0].id).toBe(120);
      expect(body.data[99].id).toBe(21);
    });

    it('answers "data":[] for a caller without conversations', async () => {
      expectBody(await call('/conversation/list', { user: 9 }), 200, '{"status":true,"message":"","data":[]}');
    });

    it('loads a conversation with its messages in order', async () => {
      expectBody(
        await call('/conversation/load?id=1', { user: ALICE }),
        200,
        '{"status":true,"message":"success","data":{"id":1,"user_id":1,"name":"Trip plan","message":[' +
          '{"role":"system","content":"You are helpful."},' +
          '{"role":"user","content":"Plan a \\"trip\\" — to Zürich."},' +
          '{"role":"assistant","content":"Sure."}],"model":"gpt-4o","enable_web":false}}',
      );
    });

    it('answers "conversation not found" for an unknown id and for another user’s conversation', async () => {
      for (const path of ['/conversation/load?id=404', '/conversation/load?id=5', '/conversation/load?id=0']) {
        expectBody(await call(path, { user: ALICE }), 200, '{"status":false,"message":"conversation not found"}');
      }
    });

    it('deletes a conversation, answering {"status":true} and nothing else; a second delete is not found', async () => {
      expectBody(await call('/conversation/delete?id=2', { user: ALICE }), 200, '{"status":true}');
      expectBody(await call('/conversation/delete?id=2', { user: ALICE }), 200, '{"status":false,"message":"conversation not found"}');
      expectBody(await call('/conversation/load?id=2', { user: ALICE }), 200, '{"status":false,"message":"conversation not found"}');
    });

    it('cannot delete another user’s conversation', async () => {
      expectBody(await call('/conversation/delete?id=5', { user: ALICE }), 200, '{"status":false,"message":"conversation not found"}');
      expect(JSON.parse((await call('/conversation/load?id=5', { user: BOB })).text).status).toBe(true);
    });

    it('answers the balance', async () => {
      expectBody(await call('/quota', { user: ALICE }), 200, '{"status":true,"quota":12.5}');
      expectBody(await call('/quota', { user: BOB }), 200, '{"status":true,"quota":0}');
    });
  });

  describe('rename and clean, for the legacy web client, byte for byte', () => {
    const rename = (body: string, user = DAVE) => call('/conversation/rename', { method: 'POST', user, body });
    const nameOf = async (id: number, user = DAVE) => JSON.parse((await call(`/conversation/load?id=${id}`, { user })).text).data?.name;

    it('renames a conversation, storing the name exactly as given', async () => {
      const name = '  Ünïcode “quotes” \\ 🚀 \t tab  ';
      expectBody(await rename(JSON.stringify({ id: 1, name })), 200, '{"status":true,"message":""}');
      expect(await nameOf(1)).toBe(name);
      // The rest of the conversation is untouched.
      const loaded = JSON.parse((await call('/conversation/load?id=1', { user: DAVE })).text);
      expect(loaded.data).toMatchObject({ message: [{ role: 'user', content: 'keep me' }], model: 'gpt-4o', enable_web: false });
    });

    it('accepts 256 characters, counted as a person counts them', async () => {
      const emoji = '🚀'.repeat(256);
      expectBody(await rename(JSON.stringify({ id: 2, name: emoji })), 200, '{"status":true,"message":""}');
      expect(await nameOf(2)).toBe(emoji);
    });

    it('answers "conversation not found" for an unknown id and for another user’s conversation, which keeps its name', async () => {
      for (const id of [404, 0, 3]) {
        expectBody(await rename(JSON.stringify({ id, name: 'Taken over' })), 200, '{"status":false,"message":"conversation not found"}');
      }
      expect(await nameOf(3, ERIN)).toBe('Erin’s');
    });

    const invalidNames = ['', ' ', '\t\n ', '\u3000', 'x'.repeat(257), '🚀'.repeat(257), '\ud800 lone surrogate'];
    for (const name of invalidNames) {
      it(`answers "invalid name" to ${JSON.stringify(name.length > 20 ? `${name.slice(0, 4)}… (${[...name].length})` : name)} and keeps the name`, async () => {
        expectBody(await rename(JSON.stringify({ id: 2, name })), 200, '{"status":false,"message":"invalid name"}');
        expect(await nameOf(2)).toBe('🚀'.repeat(256));
      });
    }

    const badBodies: [string, string][] = [
      ['', 'request body must be a JSON object'],
      ['{', 'request body is not valid JSON'],
      ['{"id":1,"name":"x"', 'request body is not valid JSON'],
      ['[]', 'request body must be a JSON object'],
      ['null', 'request body must be a JSON object'],
      ['{"name":"x"}', 'invalid id'],
      ['{"id":"1","name":"x"}', 'invalid id'],
      ['{"id":1.5,"name":"x"}', 'invalid id'],
      ['{"id":-1,"name":"x"}', 'invalid id'],
      ['{"id":2147483648,"name":"x"}', 'invalid id'],
      ['{"id":[1],"name":"x"}', 'invalid id'],
      ['{"id":{"$gt":0},"name":"x"}', 'invalid id'],
      ['{"id":null,"name":"x"}', 'invalid id'],
      ['{"id":2}', 'invalid name'],
      ['{"id":2,"name":5}', 'invalid name'],
      ['{"id":2,"name":null}', 'invalid name'],
      ['{"id":2,"name":["x"]}', 'invalid name'],
      ['{"id":2,"name":{"$set":"x"}}', 'invalid name'],
    ];
    for (const [body, message] of badBodies) {
      it(`refuses rename with body ${JSON.stringify(body)}: "${message}"`, async () => {
        expectBody(await rename(body), 200, JSON.stringify({ status: false, message }));
      });
    }

    it('renamed nothing through the refused requests', async () => {
      expect(await nameOf(2)).toBe('🚀'.repeat(256));
    });

    it('refuses rename without credentials with 401, before reading the body', async () => {
      const answer = await call('/conversation/rename', { method: 'POST', body: '{' });
      expectBody(answer, 401, '{"status":false,"message":"unauthorized"}');
    });

    it('answers rename over GET and HEAD with 405 and Allow: POST', async () => {
      for (const method of ['GET', 'HEAD']) {
        const answer = await call('/conversation/rename', { method, user: DAVE });
        expect(answer.status).toBe(405);
        expect(answer.headers.get('allow')).toBe('POST');
      }
    });

    it('never cleans or deletes on HEAD /conversation/clean or /conversation/delete: 405 with Allow: GET', async () => {
      for (const path of ['/conversation/clean', '/conversation/delete?id=3']) {
        const answer = await call(path, { method: 'HEAD', user: ERIN });
        expect(answer.status).toBe(405);
        expect(answer.headers.get('allow')).toBe('GET');
      }
      expect(JSON.parse((await call('/conversation/list', { user: ERIN })).text).data).toHaveLength(2);
    });

    it('answers clean over POST with 405 and Allow: GET, and without credentials with 401', async () => {
      const post = await call('/conversation/clean', { method: 'POST', user: ERIN, body: '{}' });
      expect(post.status).toBe(405);
      expect(post.headers.get('allow')).toBe('GET');
      expectBody(await call('/conversation/clean'), 401, '{"status":false,"message":"unauthorized"}');
      expect(JSON.parse((await call('/conversation/list', { user: ERIN })).text).data).toHaveLength(2);
    });

    it('cleans all of the caller’s conversations and no one else’s', async () => {
      expectBody(await call('/conversation/clean', { user: ERIN }), 200, '{"status":true,"message":""}');
      expectBody(await call('/conversation/list', { user: ERIN }), 200, '{"status":true,"message":"","data":[]}');
      expect(JSON.parse((await call('/conversation/list', { user: DAVE })).text).data).toHaveLength(2);
    });

    it('answers clean the same when nothing is left', async () => {
      expectBody(await call('/conversation/clean', { user: ERIN }), 200, '{"status":true,"message":""}');
    });

    it('keeps a cleaned conversation’s id reserved: the owner’s id sequence stays past it', async () => {
      const user = await gateway.models.users.findOne({ id: ERIN }).lean();
      expect(user?.lastConversationId).toBe(9);
    });
  });

  describe('features of the official deployment', () => {
    it('answers buy with "not available on this deployment" and charges nothing', async () => {
      expectBody(
        await call('/buy', { method: 'POST', user: ALICE, body: '{"quota":100}' }),
        200,
        '{"status":false,"error":"not available on this deployment"}',
      );
      expectBody(await call('/quota', { user: ALICE }), 200, '{"status":true,"quota":12.5}');
    });

    it('answers package with "not available on this deployment"', async () => {
      expectBody(await call('/package', { user: ALICE }), 200, '{"status":false,"error":"not available on this deployment"}');
    });
  });

  describe('bad input answers status:false and changes nothing', () => {
    const badIds = [
      '',
      '?id=',
      '?id=abc',
      '?id=1.5',
      '?id=1e2',
      '?id=0x1',
      '?id=%201',
      '?id=1%20',
      '?id=-1',
      '?id=+1',
      '?id=01',
      '?id=2147483648',
      '?id=99999999999999999999',
      '?id=1&id=1',
      '?id[]=1',
      '?id[$gt]=0',
      '?id[0]=1',
      '?id=1&id[$ne]=2',
    ];

    for (const endpoint of ['load', 'delete'] as const) {
      for (const query of badIds) {
        it(`refuses ${endpoint} with "${query || 'no id'}"`, async () => {
          expectBody(await call(`/conversation/${endpoint}${query}`, { user: ALICE }), 200, '{"status":false,"message":"invalid id"}');
        });
      }
    }

    it('kept every conversation through the bad deletes', async () => {
      expect(JSON.parse((await call('/conversation/load?id=1', { user: ALICE })).text).status).toBe(true);
    });

    const badBodies: [string, string][] = [
      ['', 'request body must be a JSON object'],
      ['{', 'request body is not valid JSON'],
      ['not json', 'request body is not valid JSON'],
      ['[]', 'request body must be a JSON object'],
      ['"100"', 'request body must be a JSON object'],
      ['null', 'request body must be a JSON object'],
      ['{}', 'invalid quota range (1 ~ 99999)'],
      ['{"quota":"100"}', 'invalid quota range (1 ~ 99999)'],
      ['{"quota":1.5}', 'invalid quota range (1 ~ 99999)'],
      ['{"quota":null}', 'invalid quota range (1 ~ 99999)'],
      ['{"quota":[100]}', 'invalid quota range (1 ~ 99999)'],
      ['{"quota":{"$gt":0}}', 'invalid quota range (1 ~ 99999)'],
      ['{"quota":0}', 'invalid quota range (1 ~ 99999)'],
      ['{"quota":-5}', 'invalid quota range (1 ~ 99999)'],
      ['{"quota":100000}', 'invalid quota range (1 ~ 99999)'],
      ['{"quota":1e12}', 'invalid quota range (1 ~ 99999)'],
    ];
    for (const [body, error] of badBodies) {
      it(`refuses buy with body ${JSON.stringify(body)}`, async () => {
        expectBody(await call('/buy', { method: 'POST', user: ALICE, body }), 200, JSON.stringify({ status: false, error }));
      });
    }
  });

  describe('authentication', () => {
    const endpoints: [string, string, 'message' | 'error'][] = [
      ['GET', '/conversation/list', 'message'],
      ['GET', '/conversation/load?id=1', 'message'],
      ['GET', '/conversation/delete?id=1', 'message'],
      ['POST', '/conversation/rename', 'message'],
      ['GET', '/conversation/clean', 'message'],
      ['GET', '/quota', 'error'],
      ['POST', '/buy', 'error'],
      ['GET', '/package', 'error'],
    ];
    for (const [method, path, field] of endpoints) {
      for (const [name, authorization] of [
        ['no credentials', undefined],
        ['a forged token', 'Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.x'],
      ] as const) {
        it(`answers 401 to ${method} ${path} with ${name}`, async () => {
          const answer = await call(path, {
            method,
            ...(authorization ? { authorization } : {}),
            ...(method === 'POST' ? { body: '{"quota":1,"id":1,"name":"x"}' } : {}),
          });
          expectBody(answer, 401, `{"status":false,"${field}":"unauthorized"}`);
          expect(answer.headers.get('www-authenticate')).toBe('Bearer');
        });
      }
    }

    it('answers 401 before looking at bad input', async () => {
      expectBody(await call('/conversation/delete?id=abc', { authorization: 'garbage' }), 401, '{"status":false,"message":"unauthorized"}');
    });

    it('left the conversation the unauthorized deletes named in place', async () => {
      expect(JSON.parse((await call('/conversation/load?id=1', { user: ALICE })).text).status).toBe(true);
    });
  });

  describe('paths and methods', () => {
    it('answers 404 JSON for an unknown path', async () => {
      const answer = await call('/conversation/archive', { user: ALICE });
      expect(answer.status).toBe(404);
      expect(JSON.parse(answer.text).status).toBe(false);
    });

    it('answers 405 with Allow for a known path and the wrong method', async () => {
      const list = await call('/conversation/list', { method: 'POST', user: ALICE, body: '{}' });
      expect(list.status).toBe(405);
      expect(list.headers.get('allow')).toBe('GET');
      expect(JSON.parse(list.text)).toMatchObject({ status: false });
      const buy = await call('/buy', { user: ALICE });
      expect(buy.status).toBe(405);
      expect(buy.headers.get('allow')).toBe('POST');
    });
  });

  it('serves the legacy web client’s flow with a bare token: list, load, delete, list', async () => {
    const bare = tokens[CAROL]!;
    const first = JSON.parse((await call('/conversation/list', { authorization: bare })).text);
    const newest = first.data[0].id;
    const loaded = JSON.parse((await call(`/conversation/load?id=${newest}`, { authorization: bare })).text);
    expect(loaded).toMatchObject({ status: true, message: 'success', data: { id: newest, user_id: CAROL } });
    expect(JSON.parse((await call(`/conversation/delete?id=${newest}`, { authorization: bare })).text)).toEqual({ status: true });
    const after = JSON.parse((await call('/conversation/list', { authorization: bare })).text);
    expect(after.data[0].id).toBe(newest - 1);
    expect(after.data).toHaveLength(100);
  });
});
