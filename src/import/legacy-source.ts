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
