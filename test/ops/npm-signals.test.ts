import { stat } from 'node:fs/promises';

import { describe, expect, it } from 'vitest';

import { startTestGateway } from '../support/gateway.js';
import { groupAlive, type NodeProcess, spawnNpm } from '../support/node-process.js';

const LISTENING = /listening on (http:\/\/127\.0\.0\.1:\d+)/;

async function listeningUrl(npm: NodeProcess): Promise<string> {
  const [, url] = (await npm.waitFor(LISTENING, { stream: 'stderr', timeoutMs: 60_000 })) as unknown as [string, string];
  return url;
}

/** Waits until no process of the group is left (the group's leader is npm). */
async function groupGone(npm: NodeProcess): Promise<boolean> {
  for (let attempt = 0; attempt < 50 && groupAlive(npm.child.pid!); attempt++) await new Promise((resolve) => setTimeout(resolve, 100));
  return !groupAlive(npm.child.pid!);
}

/** What Docker, systemd and a terminal do: signal the npm process, not the server behind it. */
describe('signals sent to npm itself', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)('npm start stops on %s: the port is freed and no process is left', async (signal) => {
    const built = (await stat('dist/main.js')).mtimeMs;
    const npm = spawnNpm(['start'], { PORT: '0', HOST: '127.0.0.1' });
    try {
      const url = await listeningUrl(npm);
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      npm.child.kill(signal);
      expect(await npm.exited).toEqual({ code: 0, signal: null });
      expect(await groupGone(npm)).toBe(true);
      await expect(fetch(`${url}/healthz`)).rejects.toThrow();
      expect(npm.stdout()).toMatch(/"msg":"stopped"/);
      // Nothing had changed since the suite's build: npm start ran the compiled code as it was.
      expect((await stat('dist/main.js')).mtimeMs).toBe(built);
    } finally {
      if (groupAlive(npm.child.pid!)) process.kill(-npm.child.pid!, 'SIGKILL');
    }
  });

  it('npm start keeps serving for SHUTDOWN_DELAY_MS with /readyz at 503, then exits 0', async () => {
    const npm = spawnNpm(['start'], { PORT: '0', HOST: '127.0.0.1', SHUTDOWN_DELAY_MS: '3000', RATE_LIMIT: '0' });
    try {
      const url = await listeningUrl(npm);
      const quota = (token: string) => fetch(`${url}/quota`, { headers: { authorization: `Bearer ${token}` } });
      const token = /^ {2}(ey[\w-]+\.[\w-]+\.[\w-]+)$/m.exec(npm.stderr())![1]!;
      const justBefore = Array.from({ length: 20 }, () => quota(token));
      npm.child.kill('SIGTERM');
      await npm.waitFor(/"msg":"stopping/);
      const readiness = await fetch(`${url}/readyz`);
      expect(readiness.status).toBe(503);
      const during = await Promise.all(Array.from({ length: 20 }, () => quota(token)));
      expect(during.map((response) => response.status)).toEqual(Array(20).fill(200));
      expect((await Promise.all(justBefore)).map((response) => response.status)).toEqual(Array(20).fill(200));
      expect(await npm.exited).toEqual({ code: 0, signal: null });
      expect(await groupGone(npm)).toBe(true);
    } finally {
      if (groupAlive(npm.child.pid!)) process.kill(-npm.child.pid!, 'SIGKILL');
    }
  });

  it('npm run sidecar stops on SIGTERM too', async () => {
    const gateway = await startTestGateway();
    const npm = spawnNpm(['run', 'sidecar', '--', '--upstream', `${gateway.url}/graphql`], { PORT: '0', HOST: '127.0.0.1' });
    try {
      const [, url] = (await npm.waitFor(/\((http:\/\/127\.0\.0\.1:\d+)\), forwarding/, {
        stream: 'stderr',
        timeoutMs: 60_000,
      })) as unknown as [string, string];
      npm.child.kill('SIGTERM');
      expect(await npm.exited).toEqual({ code: 0, signal: null });
      expect(await groupGone(npm)).toBe(true);
      await expect(fetch(`${url}/healthz`)).rejects.toThrow();
    } finally {
      if (groupAlive(npm.child.pid!)) process.kill(-npm.child.pid!, 'SIGKILL');
      await gateway.stop();
    }
  });
});
