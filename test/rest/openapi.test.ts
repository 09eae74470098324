import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ManualClock } from '../support/clock.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { servedAtOnce } from '../support/rate-limits.js';

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
  ['POST', '/conversation/rename', '{"id":1,"name":"Renamed"}'],
  ['POST', '/conversation/rename', '{"id":99,"name":"Renamed"}'],
  ['POST', '/conversation/rename', '{"id":1,"name":" "}'],
  ['POST', '/conversation/rename', '{"id":"1","name":"x"}'],
  ['POST', '/conversation/rename', '{'],
  ['GET', '/quota'],
  ['POST', '/buy', '{"quota":10}'],
  ['POST', '/buy', '{"quota":"ten"}'],
  ['GET', '/package'],
  ['GET', '/conversation/list', undefined, false],
  ['POST', '/buy', '{"quota":10}', false],
  ['POST', '/conversation/rename', '{"id":1,"name":"x"}', false],
  // Last: it leaves nothing to list.
  ['GET', '/conversation/clean'],
];

describe('GET /openapi.json', () => {
  it('describes exactly the six documented endpoints, and rename and clean', () => {
    expect(document.openapi).toBe('3.1.0');
    expect(
      Object.entries(document.paths)
        .map(([path, item]) => `${Object.keys(item as object)[0]} ${path}`)
        .sort(),
    ).toEqual([
      'get /conversation/clean',
      'get /conversation/delete',
      'get /conversation/list',
      'get /conversation/load',
      'get /package',
      'get /quota',
      'post /buy',
      'post /conversation/rename',
    ]);
    expect(document.paths['/conversation/rename'].post.requestBody.content['application/json'].schema.required).toEqual(['id', 'name']);
    expect(document.paths['/conversation/load'].get.parameters[0]).toMatchObject({ name: 'id', in: 'query', required: true });
    expect(document.paths['/buy'].post.requestBody.content['application/json'].schema.required).toEqual(['quota']);
    expect(document.paths['/buy'].post.parameters).toEqual([
      expect.objectContaining({ name: 'idempotency-key', in: 'header', required: false, description: expect.stringContaining('retry') }),
    ]);
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

  /** The documented answer to `method path` with `status`: the operation's, or the document's own for unknown paths and methods. */
  function described(method: string, path: string, status: number): any {
    const item = document.paths[path.split('?')[0]!];
    if (item === undefined) return status === 404 ? document.components.responses.NoSuchEndpoint : undefined;
    const operation = item[method.toLowerCase()];
    if (operation === undefined) return status === 405 ? document.components.responses.MethodNotAllowed : undefined;
    return operation.responses[String(status)];
  }

  async function expectDescribed(response: Response, method: string, path: string) {
    const answer = described(method, path, response.status);
    expect(answer, `status ${response.status} of ${method} ${path} is documented`).toBeDefined();
    const validate = new Ajv2020({ strict: false }).compile(answer.content['application/json'].schema);
    const body = await response.json();
    expect(validate(body), JSON.stringify(validate.errors)).toBe(true);
    for (const [name, header] of Object.entries<any>(answer.headers ?? {})) {
      const value = response.headers.get(name);
      expect(value, `header ${name}`).not.toBeNull();
      const headerValidate = new Ajv2020({ strict: false }).compile(header.schema);
      expect(headerValidate(header.schema.type === 'integer' ? Number(value) : value), `header ${name}: ${value}`).toBe(true);
    }
  }

  const failures: [name: string, method: string, path: string, body?: string][] = [
    ['an unknown path', 'GET', '/nowhere'],
    ['a known path with another method', 'GET', '/buy'],
    ['a known path with another method', 'POST', '/conversation/list', '{}'],
    ['a known path with another method', 'GET', '/conversation/rename'],
    ['a body over the limit', 'POST', '/conversation/rename', JSON.stringify({ id: 1, name: 'x'.repeat(100 * 1024) })],
    ['a body over the limit', 'POST', '/buy', JSON.stringify({ quota: 1, padding: 'x'.repeat(100 * 1024) })],
  ];
  for (const [name, method, path, body] of failures) {
    it(`describes the answer to ${name}: ${method} ${path}`, async () => {
      const response = await fetch(`${gateway.url}${path}`, { method, headers: { authorization: `Bearer ${token}` }, body });
      expect(response.status).toBeGreaterThanOrEqual(400);
      await expectDescribed(response, method, path);
    });
  }

  it('describes the answer to a caller over its rate limit', async () => {
    // On a clock that stands still, one more than the caller's counter lets through at once is refused.
    const limited = await startTestGateway({ RATE_LIMIT: '1' }, { clock: new ManualClock() });
    try {
      const authorization = `Bearer ${await limited.token(1)}`;
      const count = servedAtOnce(1) + 1;
      const responses = await Promise.all(
        Array.from({ length: count }, () => fetch(`${limited.url}/quota`, { headers: { authorization } })),
      );
      const refused = responses.find((response) => response.status === 429);
      expect(refused).toBeDefined();
      await expectDescribed(refused!, 'GET', '/quota');
    } finally {
      await limited.stop();
    }
  });

  it('describes the answer to an internal error', async () => {
    // A stored conversation without a name: the schema promises one.
    await gateway.models.conversations.collection.insertOne({ userId: 1, id: 77, model: 'gpt-4o', enableWeb: false, messages: [] });
    const response = await fetch(`${gateway.url}/conversation/load?id=77`, { headers: { authorization: `Bearer ${token}` } });
    expect(response.status).toBe(500);
    await expectDescribed(response, 'GET', '/conversation/load?id=77');
  });

  const inputs: [path: string, method: string, body?: string, headers?: Record<string, string>][] = [
    ['/conversation/load?id=1', 'GET'],
    ['/conversation/load?id=x', 'GET'],
    ['/conversation/load?id=01', 'GET'],
    ['/buy', 'POST', '{"quota":10}'],
    ['/buy', 'POST', '{"quota":10,"note":"ignored"}'],
    ['/buy', 'POST', '{"quota":0}'],
    ['/buy', 'POST', '{"quota":"ten"}'],
    ['/buy', 'POST', '[]'],
    ['/buy', 'POST', '{"quota":10}', { 'idempotency-key': '3f0e6c1a-5b7d-4e2a-9c4f-8d1b2a6e7f90' }],
    ['/buy', 'POST', '{"quota":10}', { 'idempotency-key': `!${'~'.repeat(254)}` }],
    ['/buy', 'POST', '{"quota":10}', { 'idempotency-key': 'x'.repeat(256) }],
    ['/buy', 'POST', '{"quota":10}', { 'idempotency-key': '' }],
    ['/buy', 'POST', '{"quota":10}', { 'idempotency-key': 'two words' }],
    ['/buy', 'POST', '{"quota":10}', { 'idempotency-key': 'caf\u00e9' }],
    ['/conversation/rename', 'POST', '{"id":2,"name":"Two, renamed"}'],
    ['/conversation/rename', 'POST', '{"id":2,"name":"Two","note":"ignored"}'],
    ['/conversation/rename', 'POST', '{"id":2,"name":""}'],
    ['/conversation/rename', 'POST', '{"id":2,"name":" \\t "}'],
    ['/conversation/rename', 'POST', `{"id":2,"name":"${'🚀'.repeat(256)}"}`],
    ['/conversation/rename', 'POST', `{"id":2,"name":"${'🚀'.repeat(257)}"}`],
    ['/conversation/rename', 'POST', '{"id":-2,"name":"Two"}'],
    ['/conversation/rename', 'POST', '{"id":2}'],
  ];
  const refusedInput = [
    'invalid id',
    'invalid name',
    'invalid quota range (1 ~ 99999)',
    'request body must be a JSON object',
    'invalid idempotency key (1 ~ 255 visible ASCII characters)',
  ];
  for (const [path, method, body, headers = {}] of inputs) {
    const sent = Object.entries(headers).map(([name, value]) => ` ${name}: ${JSON.stringify(value).slice(0, 40)}`);
    it(`accepts in the document exactly what the server accepts: ${method} ${path}${body ? ` ${body}` : ''}${sent.join('')}`, async () => {
      const response = await fetch(`${gateway.url}${path}`, { method, headers: { ...headers, authorization: `Bearer ${token}` }, body });
      const answer = (await response.json()) as { message?: string; error?: string };
      const accepted = !refusedInput.includes(answer.message ?? answer.error ?? '');
      const operation = document.paths[path.split('?')[0]!][method.toLowerCase()];
      const ajv = new Ajv2020({ strict: false });
      const query = new URLSearchParams(path.split('?')[1]);
      const given = (parameter: any): string | null =>
        parameter.in === 'query' ? query.get(parameter.name) : (headers[parameter.name.toLowerCase()] ?? null);
      const documented =
        operation.parameters.every((parameter: any) =>
          given(parameter) === null ? !parameter.required : ajv.compile(parameter.schema)(given(parameter)),
        ) &&
        (body === undefined || ajv.compile(operation.requestBody.content['application/json'].schema)(JSON.parse(body)));
      expect(documented).toBe(accepted);
    });
  }

  it('names this server as the base of every path', () => {
    expect(document.servers).toEqual([expect.objectContaining({ url: '/' })]);
  });

  it('describes the answer when the database is unavailable', async () => {
    await gateway.database.close();
    const response = await fetch(`${gateway.url}/conversation/list`, { headers: { authorization: `Bearer ${token}` } });
    expect(response.status).toBe(503);
    await expectDescribed(response, 'GET', '/conversation/list');
  });

  it('rejects a body that breaks the documented shape (the check can fail)', () => {
    const schema = document.paths['/conversation/list'].get.responses['200'].content['application/json'].schema;
    const validate = new Ajv2020({ strict: false }).compile(schema);
    expect(validate({ status: true, message: '', data: [{ id: 1 }] })).toBe(false);
  });
});
