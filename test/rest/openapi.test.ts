import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../support/gateway.js';

let gateway: TestGateway;
let document: any;
let token: string;

beforeAll(async () => {
  gateway = await startTestGateway();
  await gateway.seed({
    users: [{ id: 1, username: 'alice', quota: 2.25 }],
    conversations: [
      { userId: 1, id: 1, name: 'One', model: 'gpt-4o', enableWeb: true, messages: [{ role: 'user', content: 'hi' }] },
      { userId: 1, id: 2, name: 'Two', model: 'gpt-4o', enableWeb: false, messages: [] },
    ],
  });
  token = await gateway.token(1);
  document = await (await fetch(`${gateway.url}/openapi.json`)).json();
});

afterAll(() => gateway?.stop());

const requests: [method: string, path: string, body?: string, authorized?: boolean][] = [
  ['GET', '/conversation/list'],
  ['GET', '/conversation/load?id=1'],
  ['GET', '/conversation/load?id=99'],
  ['GET', '/conversation/load?id=x'],
  ['GET', '/conversation/delete?id=2'],
  ['GET', '/conversation/delete?id=2'],
  ['GET', '/quota'],
  ['POST', '/buy', '{"quota":10}'],
  ['POST', '/buy', '{"quota":"ten"}'],
  ['GET', '/package'],
  ['GET', '/conversation/list', undefined, false],
  ['POST', '/buy', '{"quota":10}', false],
];

describe('GET /openapi.json', () => {
  it('describes exactly the six documented endpoints', () => {
    expect(document.openapi).toBe('3.1.0');
    expect(Object.entries(document.paths).map(([path, item]) => `${Object.keys(item as object)[0]} ${path}`).sort()).toEqual([
      'get /conversation/delete',
      'get /conversation/list',
      'get /conversation/load',
      'get /package',
      'get /quota',
      'post /buy',
    ]);
    expect(document.paths['/conversation/load'].get.parameters[0]).toMatchObject({ name: 'id', in: 'query', required: true });
    expect(document.paths['/buy'].post.requestBody.content['application/json'].schema.required).toEqual(['quota']);
  });

  for (const [method, path, body, authorized = true] of requests) {
    it(`matches the real answer to ${method} ${path}${body ? ` ${body}` : ''}${authorized ? '' : ' without credentials'}`, async () => {
      const response = await fetch(`${gateway.url}${path}`, {
        method,
        headers: authorized ? { authorization: `Bearer ${token}` } : {},
        body,
      });
      const operation = document.paths[path.split('?')[0]!][method.toLowerCase()];
      const described = operation.responses[String(response.status)];
      expect(described, `status ${response.status} is documented`).toBeDefined();
      const validate = new Ajv2020({ strict: false }).compile(described.content['application/json'].schema);
      const answer = await response.json();
      expect(validate(answer), JSON.stringify(validate.errors)).toBe(true);
    });
  }

  it('rejects a body that breaks the documented shape (the check can fail)', () => {
    const schema = document.paths['/conversation/list'].get.responses['200'].content['application/json'].schema;
    const validate = new Ajv2020({ strict: false }).compile(schema);
    expect(validate({ status: true, message: '', data: [{ id: 1 }] })).toBe(false);
  });
});
