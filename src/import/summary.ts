import { MICROS_PER_POINT } from '../accounts/points.js';
import { LEGACY_TABLES } from './chat-nio.js';
import type { ImportSummary } from './importer.js';

/** Rows left out in all tables. */
export function rowsLeftOut(summary: ImportSummary): number {
  return LEGACY_TABLES.reduce((sum, table) => sum + summary.tables[table].leftOut, 0);
}

/**
 * The closing summary: per table the rows read, written, there already and left out, then the
 * sums of the balances read and written, which are equal when no balance was left out.
 */
export function formatSummary(summary: ImportSummary, options: { dryRun: boolean }): string {
  const header = ['table', 'read', options.dryRun ? 'would write' : 'written', 'there already', 'left out'];
  const rows = LEGACY_TABLES.map((table) => {
    const { read, written, there, leftOut } = summary.tables[table];
    return [table, read, written, there, leftOut].map(String);
  });
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]) =>
    cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[0]!) : cell.padStart(widths[column]!))).join('  ');
  const { read, written, leftOut } = summary.balances;
  return [
    line(header),
    ...rows.map(line),
    `balances in points: read ${points(read)}, ${options.dryRun ? 'would write' : 'written'} ${points(written)}, left out ${points(leftOut)}`,
    ...(summary.roundedBalances === 0
      ? []
      : [`${summary.roundedBalances} balances stored as REAL had more than six decimals: rounded to six (half to even)`]),
    ...(summary.complete ? [] : ['stopped before the end: run the same command again to finish']),
  ].join('\n');
}

/** A sum of micro-points as points with all six decimals, e.g. 15.641594. */
function points(micros: bigint): string {
  const magnitude = micros < 0n ? -micros : micros;
  const perPoint = BigInt(MICROS_PER_POINT);
  return `${micros < 0n ? '-' : ''}${magnitude / perPoint}.${String(magnitude % perPoint).padStart(6, '0')}`;
}
