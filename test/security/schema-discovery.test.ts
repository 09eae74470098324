import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { documentIdOf } from '../../src/operations/documents.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { discoverSchema, type Discovery, schemaNames } from '../support/schema-discovery.js';
import { postGraphql } from './http.js';

/** What a clairvoyance-style guess learns of the schema from `gateway`. */
async function discover(gateway: TestGateway): Promise<Discovery> {
  const authorization = `Bearer ${await gateway.token(1)}`;
  return discoverSchema(async (query) => (await postGraphql(gateway.url, { query }, { authorization })).text);
}

let trustedOnly: TestGateway;
let production: TestGateway;
let development: TestGateway;

beforeAll(async () => {
  const file = join(await mkdtemp(join(tmpdir(), 'documents-')), 'persisted-documents.json');
  const text = 'query Balance { quota }';
  await writeFile(file, JSON.stringify({ [documentIdOf(text)]: text }));
  [trustedOnly, production, development] = await Promise.all([
    startTestGateway({ NODE_ENV: 'production', PERSISTED_DOCUMENTS: file, PERSISTED_DOCUMENTS_ONLY: 'true' }),
    startTestGateway({ NODE_ENV: 'production' }),
    startTestGateway({}),
  ]);
});
afterAll(async () => {
  await Promise.all([trustedOnly?.stop(), production?.stop(), development?.stop()]);
});

describe('guessing the schema from a word list that holds every one of its names, introspection off', () => {
  it('learns nothing in production with trusted documents only: every guess gets the same answer', async () => {
    const { named, distinguished, requests } = await discover(trustedOnly);
    expect(requests).toBeGreaterThan(500);
    expect([...named]).toEqual([]);
    expect([...distinguished]).toEqual([]);
  });

  it('reads no name of the schema out of any answer in production without trusted documents', async () => {
    const { named } = await discover(production);
    expect([...named]).toEqual([]);
  });

  it('reads names out of validation messages in development, which is what production withholds', async () => {
    const { named } = await discover(development);
    const { types } = schemaNames();
    expect([...types].filter((type) => named.has(type)).length).toBeGreaterThan(types.size / 2);
  });
});
