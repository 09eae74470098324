import { access } from 'node:fs/promises';

import sqlite from 'node-sqlite3-wasm';

import { InvalidInput } from '../invalid-input.js';
import type { LegacySource, Row } from './legacy-source.js';

/**
 * Chat Nio's SQLite file (`db/chatnio.db`), read-only, through SQLite compiled to WebAssembly:
 * nothing native to build, and the file is read page by page as queries step, never loaded whole.
 */
export async function openSqliteSource(path: string): Promise<LegacySource> {
  if (path === '') throw new InvalidInput(['--from sqlite: needs a path, e.g. sqlite:db/chatnio.db']);
  try {
    await access(path);
  } catch (error) {
    throw new InvalidInput([`${path}: cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`]);
  }
  const database = new sqlite.Database(path, { readOnly: true, fileMustExist: true });
  return {
    description: `sqlite:${path}`,
    balancesAreFloats: true,
    // octet_length() takes a cell's size from its record header, without reading the cell.
    sizeOf: (column) => `octet_length(${column})`,
    // The binding would cut text at a NUL and replace bytes that are not UTF-8: text comes as a BLOB of its bytes.
    valueOf: (column) => `CASE WHEN typeof(${column}) = 'text' THEN CAST(${column} AS BLOB) ELSE ${column} END`,
    async *rows(sql: string): AsyncGenerator<Row> {
      const statement = database.prepare(sql);
      try {
        for (const row of statement.iterate()) yield row;
      } finally {
        statement.finalize();
      }
    },
    async close() {
      database.close();
    },
  };
}
