import { readdir, readFile, readlink, stat } from 'node:fs/promises';
import { dirname } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { type NodeProcess, spawnNode } from '../support/node-process.js';

/** The inodes of a process's open sockets (/proc/PID/fd). */
async function socketInodes(pid: number): Promise<Set<string>> {
  const inodes = new Set<string>();
  for (const fd of await readdir(`/proc/${pid}/fd`)) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode) inodes.add(inode);
  }
  return inodes;
}

/** TCP ports a process listens on: its sockets among the listening entries (state 0A) of /proc/net/tcp and tcp6. */
async function listeningTcpPorts(pid: number): Promise<number[]> {
  const inodes = await socketInodes(pid);
  const ports: number[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of (await readFile(table, 'utf8')).split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields[3] === '0A' && inodes.has(fields[9]!)) ports.push(parseInt(fields[1]!.split(':')[1]!, 16));
    }
  }
  return ports;
}

/** Paths of the Unix sockets a process listens on (state 01 in /proc/net/unix). */
async function listeningUnixSockets(pid: number): Promise<string[]> {
  const inodes = await socketInodes(pid);
  return (await readFile('/proc/net/unix', 'utf8'))
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields[3] === '00010000' && inodes.has(fields[6]!) && fields[7] !== undefined)
    .map((fields) => fields[7]!);
}

describe.skipIf(process.platform !== 'linux')('the engine started by npm start', () => {
  let gateway: NodeProcess;
  let url: string;
  let socketPath: string;

  beforeAll(async () => {
    gateway = spawnNode('dist/main.js', [], {
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      NODE_ENV: 'production',
      SHUTDOWN_DELAY_MS: '0',
    });
    const [logLine] = await gateway.waitFor(/^\{.*"msg":"listening".*\}$/m);
    url = (JSON.parse(logLine) as { url: string }).url;
    socketPath = (await listeningUnixSockets(gateway.child.pid!))[0] ?? '';
  });
  afterAll(async () => {
    if (gateway?.child.exitCode === null) {
      gateway.child.kill('SIGTERM');
      await gateway.exited;
    }
  });

  it('listens on no TCP port: the process’s only one is the HTTP port', async () => {
    expect(await listeningTcpPorts(gateway.child.pid!)).toEqual([Number(new URL(url).port)]);
  });

  it('listens on a Unix socket only its user can use (0600), in a directory only its user can enter (0700)', async () => {
    expect(socketPath).toMatch(/mongodb\.sock$/);
    expect((await stat(socketPath)).isSocket()).toBe(true);
    expect((await stat(socketPath)).mode & 0o777).toBe(0o600);
    expect((await stat(dirname(socketPath))).mode & 0o777).toBe(0o700);
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
  });

  it('warns in production that every write is lost on exit', () => {
    const warning = gateway
      .stdout()
      .split('\n')
      .find((line) => line.includes('"level":40'));
    expect(warning).toMatch(/in-memory embedded engine: every write is lost when the process exits/);
  });

  it('leaves nothing behind when it stops', async () => {
    gateway.child.kill('SIGTERM');
    expect(await gateway.exited).toEqual({ code: 0, signal: null });
    await expect(stat(dirname(socketPath))).rejects.toThrow(/ENOENT/);
  });
});
