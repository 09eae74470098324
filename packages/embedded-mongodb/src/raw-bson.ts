import { BSON, type Document, Long } from 'bson';

/**
 * Byte-level work on stored documents, so that the common paths (returning
 * documents, projecting top-level fields, inserting) never decode and
 * re-encode them: that keeps every BSON type exact and is much faster.
 */

export interface RawElement {
  name: string;
  /** Byte range of the whole element (type byte, name, value). */
  start: number;
  end: number;
}

export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export function rawElements(doc: Buffer): RawElement[] {
  const out: RawElement[] = [];
  for (const [, nameOffset, nameLength, offset, length] of BSON.onDemand.parseToElements(doc)) {
    out.push({
      name: doc.toString('utf8', nameOffset, nameOffset + nameLength),
      start: nameOffset - 1,
      end: offset + length,
    });
  }
  return out;
}

/** A document made of some elements of `doc`, copied byte for byte in the given order. */
export function documentFromElements(doc: Buffer, elements: RawElement[]): Buffer {
  let size = 5;
  for (const e of elements) size += e.end - e.start;
  const out = Buffer.allocUnsafe(size);
  out.writeInt32LE(size, 0);
  let at = 4;
  for (const e of elements) at += doc.copy(out, at, e.start, e.end);
  out[at] = 0;
  return out;
}

/** The size of `docs` as one BSON array value: its length, each element's type, key and document, its end. */
function arraySize(docs: Buffer[]): number {
  let size = 5;
  for (let i = 0; i < docs.length; i++) size += 2 + String(i).length + docs[i]!.length;
  return size;
}

/** Writes `docs` as one BSON array value of `size` bytes into `out` at `at`; returns where it ends. */
function writeArray(out: Buffer, at: number, docs: Buffer[], size: number): number {
  out.writeInt32LE(size, at);
  at += 4;
  for (let i = 0; i < docs.length; i++) {
    out[at++] = 0x03;
    at += out.write(String(i), at, 'latin1');
    out[at++] = 0;
    at += docs[i]!.copy(out, at);
  }
  out[at] = 0;
  return at + 1;
}

export const MAX_BSON_OBJECT_SIZE = 16 * 1024 * 1024;

/**
 * `{cursor: {firstBatch|nextBatch: [...], id, ns, ...extra}, ok: 1}` with the
 * stored documents spliced in as they are.
 */
export function cursorReply(field: 'firstBatch' | 'nextBatch', docs: Buffer[], id: bigint, ns: string, extra: Document = {}): Buffer {
  const skeleton = asBuffer(BSON.serialize({ cursor: { [field]: [], id: Long.fromBigInt(id), ns, ...extra }, ok: 1 }));
  // outer length, "cursor" element header, cursor length, batch element header: then the empty array (5 bytes).
  const arrayAt = 4 + 1 + 'cursor'.length + 1 + 4 + 1 + field.length + 1;
  // One copy of the documents, straight into the reply: a batch may hold 16 MiB of them.
  const size = arraySize(docs);
  const out = Buffer.allocUnsafe(skeleton.length - 5 + size);
  skeleton.copy(out, 0, 0, arrayAt);
  const end = writeArray(out, arrayAt, docs, size);
  skeleton.copy(out, end, arrayAt + 5);
  out.writeInt32LE(out.length, 0);
  out.writeInt32LE(skeleton.readInt32LE(12) + size - 5, 12);
  return out;
}
