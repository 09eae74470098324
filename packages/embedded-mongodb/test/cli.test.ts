import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { MongoClient } from 'mongodb';
import { describe, expect, it } from 'vitest';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  return typeof address === 'object' && address ? address.port : 0;
}

const run = promisify(execFile);

describe('embedded-mongodb (the command line)', () => {
  it('answers --help with its usage and exit code 0, and a bad option with one line and exit code 2', async () => {
    const help = await run(process.execPath, [CLI, '--help']);
    expect(help.stdout).toMatch(/^Usage: embedded-mongodb/);
    const bad = await run(process.execPath, [CLI, '--colour', 'blue']).catch((error: { code: number; stderr: string }) => error);
    expect('code' in bad && bad.code).toBe(2);
    expect((bad as { stderr: string }).stderr.trim().split('\n')).toHaveLength(1);
  });

  it('names every bad value in a line of its own, with exit code 2', async () => {
    const bad = await run(process.execPath, [CLI, '--port', '65536', '--replica-set', '', '--data-dir', ' ']).catch(
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    expect('code' in bad && bad.code).toBe(2);
    expect((bad as { stdout: string }).stdout).toBe('');
    expect((bad as { stderr: string }).stderr).toBe(
      [
        'embedded-mongodb: --port must be a whole number from 0 to 65535, not "65536"',
        'embedded-mongodb: --replica-set needs a name (see --help)',
        'embedded-mongodb: --data-dir needs a directory (see --help)',
        '',
      ].join('\n'),
    );
  });

  it('says in one line that its port is in use, with exit code 1', async () => {
    const taken = createServer().listen(0, '127.0.0.1');
    await once(taken, 'listening');
    const { port } = taken.address() as { port: number };
    try {
      const failed = await run(process.execPath, [CLI, '--port', String(port)]).catch(
        (error: { code: number; stdout: string; stderr: string }) => error,
      );
      expect('code' in failed && failed.code).toBe(1);
      expect((failed as { stdout: string }).stdout).toBe('');
      expect((failed as { stderr: string }).stderr).toBe(`embedded-mongodb: port ${port} on 127.0.0.1 is already in use\n`);
    } finally {
      taken.close();
    }
  });

  it('serves the driver on the given port, announces its URI and exits 0 on SIGTERM', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, [CLI, '--port', String(port), '--standalone'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = once(child, 'exit');
    try {
      const uri = await new Promise<string>((resolve, reject) => {
        let output = '';
        child.stdout.on('data', (chunk: Buffer) => {
          output += chunk.toString();
          const match = /mongodb:\/\/127\.0\.0\.1:(\d+)\S*/.exec(output);
          if (match) resolve(match[0]);
        });
        child.stderr.on('data', (chunk: Buffer) => reject(new Error(chunk.toString())));
        child.on('exit', (code) => reject(new Error(`exited early with ${code}: ${output}`)));
      });
      expect(uri).toContain(`mongodb://127.0.0.1:${port}`);

      const client = await MongoClient.connect(uri);
      try {
        await client
          .db('cli')
          .collection('things')
          .insertOne({ _id: 1 as never, ok: true });
        expect(await client.db('cli').collection('things').findOne({})).toEqual({ _id: 1, ok: true });
        expect((await client.db('admin').command({ hello: 1 })).setName).toBeUndefined();
      } finally {
        await client.close();
      }
    } finally {
      child.kill('SIGTERM');
    }
    const [code, signal] = await exited;
    expect(signal).toBeNull();
    expect(code).toBe(0);
  });
});
