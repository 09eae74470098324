import mysql from 'mysql2';

import { InvalidInput } from '../invalid-input.js';
import type { LegacySource, Row } from './legacy-source.js';

/** Rows a query buffers ahead of the importer; the driver pauses the socket beyond. */
const ROWS_AHEAD = 500;

/** Column types whose values are text or bytes: they come as the bytes the server sends, decoded by the importer. */
const TEXT_TYPES = new Set(['VARCHAR', 'VAR_STRING', 'STRING', 'TINY_BLOB', 'BLOB', 'MEDIUM_BLOB', 'LONG_BLOB', 'ENUM', 'SET', 'JSON']);

/**
 * Text as bytes: the server sends each column converted from its character set (latin1, say) to
 * the connection's utf8mb4, and a binary column's bytes as they are; the driver would replace
 * what is not UTF-8 (a `VARBINARY`, or a surrogate MariaDB's utf8mb4 accepts) instead of refusing it.
 */
const bytesOfText: mysql.TypeCast = (field, next) => (TEXT_TYPES.has(field.type) ? field.buffer() : next());

/**
 * A MySQL or MariaDB database, as `mysql://USER:PASSWORD@HOST:PORT/DATABASE` names it
 * (`?socket=PATH` for a Unix socket instead of HOST:PORT). Results are streamed, each query on a
 * connection of its own while another is being read; `DECIMAL` columns come as their exact
 * decimal text.
 */
export async function openMysqlSource(from: string): Promise<LegacySource> {
  const { options, description } = connectionOptions(from);
  const open = new Set<mysql.Connection>();
  const connect = async () => {
    const connection = await openConnection(
      { ...options, decimalNumbers: false, typeCast: bytesOfText, connectTimeout: 5_000 },
      description,
    );
    open.add(connection);
    return connection;
  };
  const idle = [await connect()];
  return {
    description,
    balancesAreFloats: false,
    sizeOf: (column) => `OCTET_LENGTH(${column})`,
    // Text comes as bytes through `bytesOfText`.
    valueOf: (column) => column,
    async *rows(sql: string): AsyncGenerator<Row> {
      const connection = idle.pop() ?? (await connect());
      const stream = connection.query(sql).stream({ highWaterMark: ROWS_AHEAD });
      let finished = false;
      try {
        for await (const row of stream) yield row as Row;
        finished = true;
      } finally {
        if (finished) idle.push(connection);
        else {
          // A result set left half-read would hold up the connection's next query.
          stream.destroy();
          connection.destroy();
          open.delete(connection);
        }
      }
    },
    // Only reads: nothing to finish, and a result set left half-read (a stopped run) would hold up a polite QUIT.
    async close() {
      for (const connection of open) connection.destroy();
    },
  };
}

async function openConnection(options: mysql.ConnectionOptions, description: string): Promise<mysql.Connection> {
  const connection = mysql.createConnection(options);
  try {
    await new Promise<void>((resolve, reject) => connection.connect((error) => (error ? reject(error) : resolve())));
  } catch (error) {
    connection.destroy();
    throw new Error(`could not connect to ${description}: ${(error as Error).message}`, { cause: error });
  }
  // A lost connection fails the query being read; without a listener it would also crash the process.
  connection.on('error', () => undefined);
  return connection;
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
