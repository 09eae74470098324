import sqlite from 'node-sqlite3-wasm';

import type { PrivateMariaDb } from './mariadb.js';

/**
 * Chat Nio's tables as it creates them on MariaDB and on SQLite (the columns and types of
 * `connection/database.go` in coaidev/coai), and databases made of them, for the import's tests
 * and its benchmark.
 */

/** Go's encoding/json, as Chat Nio saves messages: HTML characters escaped. */
export function goJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026');
}

/** One row: its table, the columns Chat Nio fills, their values (bytes, a `Uint8Array`, are stored as text exactly as given). */
export interface Insert {
  table: string;
  columns: string[];
  values: unknown[];
}

/** How the tables differ from Chat Nio's own, for databases an import must survive. */
export interface TableChanges {
  /** SQLite: no primary keys and no unique constraints, so rows can repeat. */
  withoutKeys?: boolean;
  /** MariaDB: statements run after the tables are made and before the rows go in (`ALTER TABLE …`). */
  alter?: string;
}

/** Chat Nio's tables on MariaDB, as it creates them (the columns the import reads, and the others). */
const MARIADB_TABLES = `
  CREATE TABLE auth (
    id INT PRIMARY KEY AUTO_INCREMENT, bind_id INT UNIQUE, username VARCHAR(24) UNIQUE, token VARCHAR(255) NOT NULL,
    email VARCHAR(255) UNIQUE, password VARCHAR(64) NOT NULL, is_admin BOOLEAN DEFAULT FALSE, is_banned BOOLEAN DEFAULT FALSE);
  CREATE TABLE quota (
    id INT PRIMARY KEY AUTO_INCREMENT, user_id INT UNIQUE, quota DECIMAL(24, 6), used DECIMAL(24, 6),
    created_at DATETIME DEFAULT CURRENT_TIMESTAMP, updated_at DATETIME DEFAULT CURRENT_TIMESTAMP,
    FOREIGN KEY (user_id) REFERENCES auth(id));
  CREATE TABLE apikey (
    id INT PRIMARY KEY AUTO_INCREMENT, user_id INT UNIQUE, api_key VARCHAR(255) UNIQUE,
    created_at DATETIME DEFAULT CURRENT_TIMESTAMP, FOREIGN KEY (user_id) REFERENCES auth(id));
  CREATE TABLE package (
    id INT PRIMARY KEY AUTO_INCREMENT, user_id INT, type VARCHAR(255), created_at DATETIME DEFAULT CURRENT_TIMESTAMP,
    FOREIGN KEY (user_id) REFERENCES auth(id), UNIQUE KEY (user_id, type));
  CREATE TABLE conversation (
    id INT PRIMARY KEY AUTO_INCREMENT, user_id INT, conversation_id INT, conversation_name VARCHAR(255), data MEDIUMTEXT,
    model VARCHAR(255) NOT NULL DEFAULT 'gpt-3.5-turbo-0613', task_id VARCHAR(255) NULL,
    updated_at DATETIME DEFAULT CURRENT_TIMESTAMP, UNIQUE KEY (user_id, conversation_id));
`;

/** The same tables as Chat Nio creates them on SQLite: its SQL rewritten (INTEGER, AUTOINCREMENT, TEXT, and DECIMAL as REAL). */
const SQLITE_TABLES = `
  CREATE TABLE auth (
    id INTEGER PRIMARY KEY AUTOINCREMENT, bind_id INTEGER UNIQUE, username TEXT UNIQUE, token TEXT NOT NULL,
    email TEXT UNIQUE, password TEXT NOT NULL, is_admin BOOLEAN DEFAULT FALSE, is_banned BOOLEAN DEFAULT FALSE);
  CREATE TABLE quota (
    id INTEGER PRIMARY KEY AUTOINCREMENT, user_id INTEGER UNIQUE, quota REAL(24, 6), used REAL(24, 6),
    created_at TEXT DEFAULT CURRENT_TIMESTAMP, updated_at TEXT DEFAULT CURRENT_TIMESTAMP,
    FOREIGN KEY (user_id) REFERENCES auth(id));
  CREATE TABLE apikey (
    id INTEGER PRIMARY KEY AUTOINCREMENT, user_id INTEGER UNIQUE, api_key TEXT UNIQUE,
    created_at TEXT DEFAULT CURRENT_TIMESTAMP, FOREIGN KEY (user_id) REFERENCES auth(id));
  CREATE TABLE package (
    id INTEGER PRIMARY KEY AUTOINCREMENT, user_id INT, type TEXT, created_at TEXT DEFAULT CURRENT_TIMESTAMP,
    FOREIGN KEY (user_id) REFERENCES auth(id), UNIQUE (user_id, type));
  CREATE TABLE conversation (
    id INTEGER PRIMARY KEY AUTOINCREMENT, user_id INT, conversation_id INT, conversation_name TEXT, data TEXT,
    model TEXT NOT NULL DEFAULT 'gpt-3.5-turbo-0613', task_id TEXT NULL,
    updated_at TEXT DEFAULT CURRENT_TIMESTAMP, UNIQUE (user_id, conversation_id));
`;

/** Rows of one table in a row, at most `size` of them, from `rows` in order. */
function* runsOf(rows: Iterable<Insert>, size: number): Generator<Insert[]> {
  let run: Insert[] = [];
  for (const row of rows) {
    if (run.length > 0 && (run.length >= size || run[0]!.table !== row.table)) {
      yield run;
      run = [];
    }
    run.push(row);
  }
  if (run.length > 0) yield run;
}

/** Creates database `name` on the server (utf8mb4, as deployments of Chat Nio use), with Chat Nio's tables and `rows`. */
export async function createChatNioOnMariaDb(
  server: PrivateMariaDb,
  name: string,
  rows: Iterable<Insert>,
  changes: TableChanges = {},
): Promise<void> {
  const admin = await server.connect();
  try {
    await admin.query(`CREATE DATABASE ${name} CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci`);
  } finally {
    await admin.end();
  }
  const connection = await server.connect(name);
  try {
    await connection.query(MARIADB_TABLES);
    if (changes.alter !== undefined) await connection.query(changes.alter);
    for (const run of runsOf(rows, 500)) {
      const { table, columns } = run[0]!;
      await connection.query(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ?`, [run.map((row) => row.values)]);
    }
  } finally {
    await connection.end();
  }
}

/** Chat Nio's SQLite tables without their keys: no primary key, nothing unique. */
const SQLITE_TABLES_WITHOUT_KEYS = SQLITE_TABLES.replace(/ PRIMARY KEY AUTOINCREMENT| UNIQUE(?=[ ,])|, UNIQUE \([^)]*\)/g, '');

/**
 * Creates Chat Nio's SQLite file at `path`, as its Go code fills it: foreign keys not enforced
 * (go-sqlite3's default). Bytes are stored as TEXT holding exactly those bytes, as Go's string
 * (any bytes) would be.
 */
export function createChatNioOnSqlite(path: string, rows: Iterable<Insert>, changes: TableChanges = {}): void {
  const database = new sqlite.Database(path);
  try {
    database.exec('PRAGMA foreign_keys = OFF');
    database.exec(changes.withoutKeys === true ? SQLITE_TABLES_WITHOUT_KEYS : SQLITE_TABLES);
    database.exec('BEGIN');
    for (const { table, columns, values } of rows) {
      const placeholders = values.map((value) => (value instanceof Uint8Array ? 'CAST(? AS TEXT)' : '?'));
      database.run(`INSERT INTO ${table} (${columns.join(', ')}) VALUES (${placeholders.join(', ')})`, values as never);
    }
    database.exec('COMMIT');
  } finally {
    database.close();
  }
}
