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

/** An array of already-encoded documents, as one BSON array value. */
function encodeArray(docs: Buffer[]): Buffer {
  let size = 5;
  const keys = docs.map((_, i) => String(i));
  docs.forEach((doc, i) => {
    size += 2 + keys[i]!.length + doc.length;
  });
  const out = Buffer.allocUnsafe(size);
  out.writeInt32LE(size, 0);
  let at = 4;
  docs.forEach((doc, i) => {
    out[at++] = 0x03;
    at += out.write(keys[i]!, at, 'latin1');
    out[at++] = 0;
    at += doc.copy(out, at);
  });
  out[at] = 0;
  return out;
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
  const items = encodeArray(docs);
  const out = Buffer.concat([skeleton.subarray(0, arrayAt), items, skeleton.subarray(arrayAt + 5)]);
  const delta = items.length - 5;
  out.writeInt32LE(out.length, 0);
  out.writeInt32LE(skeleton.readInt32LE(12) + delta, 12);
  return out;
}
