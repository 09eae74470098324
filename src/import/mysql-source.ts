import mysql from 'mysql2';

import { InvalidInput } from '../invalid-input.js';
import type { LegacySource, Row } from './legacy-source.js';

/** Rows a query buffers ahead of the importer; the driver pauses the socket beyond. */
const ROWS_AHEAD = 500;

/**
 * A MySQL or MariaDB database, as `mysql://USER:PASSWORD@HOST:PORT/DATABASE` names it
 * (`?socket=PATH` for a Unix socket instead of HOST:PORT). Results are streamed; `DECIMAL`
 * columns come as their exact decimal text.
 */
export async function openMysqlSource(from: string): Promise<LegacySource> {
  const { options, description } = connectionOptions(from);
  const connection = mysql.createConnection({ ...options, decimalNumbers: false, connectTimeout: 5_000 });
  try {
    await new Promise<void>((resolve, reject) => connection.connect((error) => (error ? reject(error) : resolve())));
  } catch (error) {
    connection.destroy();
    throw new Error(`could not connect to ${description}: ${(error as Error).message}`, { cause: error });
  }
  // A lost connection fails the query being read; without a listener it would also crash the process.
  connection.on('error', () => undefined);
  return {
    description,
    balancesAreFloats: false,
    async *rows(sql: string): AsyncGenerator<Row> {
      const stream = connection.query(sql).stream({ highWaterMark: ROWS_AHEAD });
      try {
        for await (const row of stream) yield row as Row;
      } finally {
        stream.destroy();
      }
    },
    // Only reads: nothing to finish, and a result set left half-read (a stopped run) would hold up a polite QUIT.
    async close() {
      connection.destroy();
    },
  };
}

function connectionOptions(from: string): { options: mysql.ConnectionOptions; description: string } {
  let url: URL;
  try {
    url = new URL(from);
  } catch {
    throw new InvalidInput([`--from is not a valid URL: ${from.replace(/:[^:@/]*@/, ':…@')}`]);
  }
  const database = decodeURIComponent(url.pathname.slice(1));
  const socket = url.searchParams.get('socket') ?? undefined;
  const unknown = [...url.searchParams.keys()].filter((name) => name !== 'socket');
  if (database === '' || database.includes('/'))
    throw new InvalidInput(['--from must name the database: mysql://USER:PASSWORD@HOST:PORT/DATABASE']);
  if (unknown.length > 0)
    throw new InvalidInput([`--from: unknown option ${unknown.map((name) => `"${name}"`).join(', ')} (only "socket")`]);
  const user = decodeURIComponent(url.username);
  return {
    options: {
      ...(socket === undefined ? { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 3306) } : { socketPath: socket }),
      user,
      password: decodeURIComponent(url.password),
      database,
    },
    // The URL without its password.
    description: `mysql://${user === '' ? '' : `${user}@`}${url.host}/${database}${socket === undefined ? '' : `?socket=${socket}`}`,
  };
}
