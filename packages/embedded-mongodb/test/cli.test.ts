import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
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

describe('embedded-mongodb (the command line)', () => {
  it('serves the driver on the given port, announces its URI and exits 0 on SIGTERM', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, [CLI, '--port', String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
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
        await client.db('cli').collection('things').insertOne({ _id: 1 as never, ok: true });
        expect(await client.db('cli').collection('things').findOne({})).toEqual({ _id: 1, ok: true });
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
