import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

import mysql from 'mysql2/promise';

/** Debian's MariaDB server (apt-get install mariadb-server), run here as a private server per test file. */
const MARIADBD = '/usr/sbin/mariadbd';
const INSTALL_DB = '/usr/bin/mariadb-install-db';
const hasMariaDb = existsSync(MARIADBD) && existsSync(INSTALL_DB);
/** CI (which sets CI, as .ci/run does) must run the MariaDB tests: there a missing server fails them. */
const required = Boolean(process.env.CI);

/** Whether `what` (a test needing MariaDB) is skipped here: only outside CI, and only without the server. Says so when it is. */
export function skipsMariaDbTest(what: string): boolean {
  const skipped = !hasMariaDb && !required;
  if (skipped) console.warn(`${MARIADBD} is missing: ${what} is skipped (apt-get install mariadb-server to run it).`);
  return skipped;
}

export interface PrivateMariaDb {
  /** The server's Unix socket: it listens on no TCP port. */
  socket: string;
  /** A `mysql://` URL for `npm run import`, naming `database` on this server as root. */
  url(database: string): string;
  /** A connection to `database` as root (the caller ends it). */
  connect(database?: string): Promise<mysql.Connection>;
  /** Stops the server by its pid and removes its data. */
  stop(): Promise<void>;
}

/**
 * A MariaDB server of its own: a fresh data directory under a temporary folder, a socket there,
 * no networking, root without a password. Takes about five seconds (most of it creating the
 * system tables); the server stops with `stop`, by its pid.
 */
export async function startPrivateMariaDb(): Promise<PrivateMariaDb> {
  if (!hasMariaDb) throw new Error(`${MARIADBD} is missing, and CI must run the MariaDB tests: apt-get install mariadb-server`);
  const directory = await mkdtemp(join(tmpdir(), 'mariadb-'));
  const datadir = join(directory, 'data');
  const socket = join(directory, 'mysqld.sock');
  // The server refuses to run as root unless told to; as anyone else it runs as that user.
  const asUser = process.getuid?.() === 0 ? ['--user=root'] : [`--user=${userInfo().username}`];
  await promisify(execFile)(INSTALL_DB, [
    '--no-defaults',
    `--datadir=${datadir}`,
    '--auth-root-authentication-method=normal',
    '--skip-test-db',
    ...asUser,
  ]);
  const server = spawn(
    MARIADBD,
    [
      '--no-defaults',
      `--datadir=${datadir}`,
      `--socket=${socket}`,
      '--skip-networking',
      `--pid-file=${join(directory, 'mariadbd.pid')}`,
      // What Debian's own configuration sets, so that names with emoji are stored as given.
      '--character-set-server=utf8mb4',
      '--collation-server=utf8mb4_general_ci',
      ...asUser,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  try {
    await readyFor(server);
  } catch (error) {
    server.kill('SIGKILL');
    await rm(directory, { recursive: true, force: true });
    throw error;
  }
  const connect = (database?: string) => mysql.createConnection({ socketPath: socket, user: 'root', database, multipleStatements: true });
  return {
    socket,
    url: (database) => `mysql://root@localhost/${database}?socket=${encodeURIComponent(socket)}`,
    connect,
    async stop() {
      if (server.exitCode === null && server.signalCode === null) {
        const exited = new Promise((resolve) => server.once('exit', resolve));
        process.kill(server.pid!, 'SIGTERM');
        await exited;
      }
      await rm(directory, { recursive: true, force: true });
    },
  };
}

/** Resolves once the server says it accepts connections (on stderr, where it logs without --log-error). */
function readyFor(server: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    let log = '';
    const timer = setTimeout(() => reject(new Error(`mariadbd did not start within 30 s:\n${log}`)), 30_000);
    server.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      log += chunk;
      if (log.includes('ready for connections')) {
        clearTimeout(timer);
        resolve();
      }
    });
    server.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`mariadbd exited with ${code} before accepting connections:\n${log}`));
    });
  });
}
