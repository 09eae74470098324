import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { killIfRunning, type NodeProcess, runNode, spawnNode, startDemoGateway } from '../support/node-process.js';

/** A default `npm start` (no DATA_DIR, no JWT_SECRET) in a directory of its own. */
const DEFAULT_START = { DATA_DIR: '' };

let directory: string;
let running: NodeProcess | undefined;

beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'chat-gateway-data-'));
});

afterEach(async () => {
  await killIfRunning(running);
  running = undefined;
  await rm(directory, { recursive: true, force: true });
});

async function start(): Promise<{ url: string; token: string }> {
  const { service, url, token } = await startDemoGateway(DEFAULT_START, { cwd: directory });
  running = service;
  return { url, token };
}

async function stop(): Promise<void> {
  running!.child.kill('SIGTERM');
  expect((await running!.exited).code).toBe(0);
  running = undefined;
}

async function call(url: string, token: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

async function names(url: string, token: string): Promise<[number, string][]> {
  const list = await call(url, token, '/conversation/list');
  expect(list.status).toBe(200);
  return (list.body.data as { id: number; name: string }[]).map(({ id, name }) => [id, name]);
}

describe('a default npm start (DATA_DIR .data)', () => {
  it('keeps a rename and a delete across a restart, loads the demo data only once, and keeps accepting its tokens', async () => {
    const first = await start();
    expect(await names(first.url, first.token)).toEqual([
      [3, 'News digest'],
      [2, 'Regex help'],
      [1, 'Trip plan'],
    ]);
    expect((await call(first.url, first.token, '/conversation/rename', { id: 1, name: 'Lisbon in May' })).body.status).toBe(true);
    expect((await call(first.url, first.token, '/conversation/delete?id=2')).body).toEqual({ status: true });
    await stop();

    const data = join(directory, '.data');
    expect((await readdir(data)).sort()).toEqual(expect.arrayContaining(['data.mdb', 'jwt-secret']));
    expect((await stat(join(data, 'jwt-secret'))).mode & 0o777).toBe(0o600);

    const second = await start();
    // The demo data was not loaded again: the deleted conversation stays deleted, the rename stays.
    expect(await names(second.url, first.token)).toEqual([
      [3, 'News digest'],
      [1, 'Lisbon in May'],
    ]);
    const made = await runNode('dist/cli/token.js', ['--user', '1'], DEFAULT_START, { cwd: directory });
    expect(made.stderr).toBe('');
    expect(made.code).toBe(0);
    const token = made.stdout.trim();
    expect((await call(second.url, token, '/quota')).body).toMatchObject({ status: true, quota: 100 });
    // The demo token the restart printed is signed with the same kept secret.
    expect((await call(second.url, second.token, '/conversation/list')).status).toBe(200);
  }, 60_000);

  it('refuses a second gateway on the same data directory with one line, and npm run token before any start', async () => {
    const before = await runNode('dist/cli/token.js', ['--user', '1'], DEFAULT_START, { cwd: directory });
    expect(before.code).toBe(2);
    expect(before.stderr).toMatch(
      /^token: JWT_SECRET is not set, and .*\.data keeps no secret yet: start the gateway once in this directory/,
    );
    expect(before.stderr.trim().split('\n')).toHaveLength(1);

    await start();
    const second = await runNode('dist/main.js', [], { ...DEFAULT_START, PORT: '0', HOST: '127.0.0.1' }, { cwd: directory });
    expect(second.code).toBe(1);
    expect(second.stderr.trim()).toMatch(
      new RegExp(`^chat-gateway: data directory ${join(directory, '.data')} is in use by process ${running!.child.pid} \\(lock `),
    );
    expect(second.stderr.trim().split('\n')).toHaveLength(1);
    expect(second.stdout).toBe('');
  }, 60_000);

  it('stops the start with one line when DATA_DIR cannot be used', async () => {
    await writeFile(join(directory, 'a-file'), 'not a directory');
    const gateway = spawnNode('dist/main.js', [], { DATA_DIR: 'a-file/data', PORT: '0', HOST: '127.0.0.1' }, { cwd: directory });
    const { code } = await gateway.exited;
    expect(code).toBe(1);
    expect(gateway.stderr().trim()).toMatch(
      /^chat-gateway: data directory \S+\/a-file\/data cannot be created: a part of its path is not a directory$/,
    );
    expect(gateway.stderr().trim().split('\n')).toHaveLength(1);
  });
});
