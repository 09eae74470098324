import { InvalidInput } from '../invalid-input.js';
import { openMysqlSource } from './mysql-source.js';
import { openSqliteSource } from './sqlite-source.js';

/** One row as the driver gives it: column name → value. */
export type Row = Record<string, unknown>;

/** A Chat Nio database open for reading: read row by row, never whole; two queries may be read side by side. */
export interface LegacySource {
  /** Where it is, for messages: never a password. */
  readonly description: string;
  /** SQLite keeps Chat Nio's `DECIMAL(24,6)` balances as `REAL`, binary floating point. */
  readonly balancesAreFloats: boolean;
  /** SQL for the size in bytes of a cell of `column`, taken without reading the cell. */
  sizeOf(column: string): string;
  /** SQL reading a cell of `column`: text as its bytes (a `Uint8Array`), exactly as stored, for the importer to decode; numbers as numbers. */
  valueOf(column: string): string;
  rows(sql: string): AsyncIterable<Row>;
  close(): Promise<void>;
}

/** `mysql://…` (MySQL or MariaDB) or `sqlite:PATH`, as `--from` names them. */
export async function openLegacySource(from: string): Promise<LegacySource> {
  if (from.startsWith('sqlite:')) return openSqliteSource(from.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, ''));
  if (/^(mysql|mariadb):\/\//.test(from)) return openMysqlSource(from);
  throw new InvalidInput([`--from must be mysql://USER:PASSWORD@HOST:PORT/DATABASE or sqlite:PATH, not "${from}"`]);
}
