import { InvalidInput } from '../invalid-input.js';
import type { LegacySource } from './legacy-source.js';
import { openMysqlSource } from './mysql-source.js';
import { openSqliteSource } from './sqlite-source.js';

/** `mysql://…` (MySQL or MariaDB) or `sqlite:PATH`, as `--from` names them. */
export async function openLegacySource(from: string): Promise<LegacySource> {
  if (from.startsWith('sqlite:')) return openSqliteSource(from.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, ''));
  if (/^(mysql|mariadb):\/\//.test(from)) return openMysqlSource(from);
  throw new InvalidInput([`--from must be mysql://USER:PASSWORD@HOST:PORT/DATABASE or sqlite:PATH, not "${from}"`]);
}
