import { type AnyBulkWriteOperation, MongoBulkWriteError } from 'mongodb';
import type { Model } from 'mongoose';

import type { DatabaseCommands } from './database-commands.js';

/** MongoDB's duplicate key error. */
const DUPLICATE_KEY = 11000;

export interface InsertMissingResult {
  /** Positions of the documents this call inserted; the others were there already. */
  inserted: Set<number>;
  /** Positions of the documents refused because another document holds one of their unique keys. */
  duplicates: Set<number>;
}

/**
 * Inserts each document unless one with its key is there already, in one command: upserts that
 * only set fields on insert, so a document already there is left exactly as it is, timestamps
 * included, and running it again changes nothing. A document whose other unique key another
 * document holds is reported, not written; any other failure throws.
 *
 * The documents must be complete and of the schema's types (the caller checked them): they go
 * to the driver as they are, since Mongoose's casting of each update (every message of a
 * conversation made a subdocument and back) would cost more than the write itself.
 */
export async function insertMissing<Shape>(
  commands: DatabaseCommands,
  model: Model<Shape>,
  entries: readonly { key: Partial<Shape>; document: Partial<Shape> }[],
  now = new Date(),
): Promise<InsertMissingResult> {
  if (entries.length === 0) return { inserted: new Set(), duplicates: new Set() };
  const operations = entries.map(({ key, document }) => ({
    updateOne: { filter: key, update: { $setOnInsert: { ...document, createdAt: now, updatedAt: now } }, upsert: true },
  }));
  try {
    const result = await commands.time('update', model.collection.bulkWrite(operations as AnyBulkWriteOperation[], { ordered: false }));
    return { inserted: positions(result.upsertedIds), duplicates: new Set() };
  } catch (error) {
    if (!(error instanceof MongoBulkWriteError)) throw error;
    const failures = [error.writeErrors].flat();
    if (failures.some((failure) => failure.code !== DUPLICATE_KEY)) throw error;
    return { inserted: positions(error.result.upsertedIds), duplicates: new Set(failures.map((failure) => failure.index)) };
  }
}

function positions(upsertedIds: { [position: number]: unknown }): Set<number> {
  return new Set(Object.keys(upsertedIds).map(Number));
}
