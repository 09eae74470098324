import type { Binary, Document } from 'bson';

import { bsonTypeOf, compareValues, entriesOf, isDocument, isPlainObject, typeName } from './values.js';

/**
 * Field access on decoded documents that treats every name as data: a field
 * called `__proto__` is an own property like any other, never the prototype.
 */
export function hasField(doc: Document, name: string): boolean {
  return Object.hasOwn(doc, name);
}

export function getField(doc: Document, name: string): unknown {
  return Object.hasOwn(doc, name) ? doc[name] : undefined;
}

export function setField(doc: Document, name: string, value: unknown): void {
  if (name === '__proto__') Object.defineProperty(doc, name, { value, enumerable: true, writable: true, configurable: true });
  else doc[name] = value;
}

export function removeField(doc: Document, name: string): void {
  delete doc[name];
}

/** A copy of a typed value whose documents and arrays can be changed without touching the original. */
export function deepCopy<T>(value: T): T {
  if (Array.isArray(value)) return value.map(deepCopy) as T;
  if (isPlainObject(value)) {
    const out: Document = {};
    for (const [name, field] of Object.entries(value)) setField(out, name, deepCopy(field));
    return out as T;
  }
  return value;
}

/** The same BSON value, type included (1 and 1.0 differ, as do binaries of different subtypes). */
export function identical(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  const type = typeName(a);
  if (type !== typeName(b)) return false;
  switch (type) {
    case 'array': {
      const x = a as unknown[];
      const y = b as unknown[];
      return x.length === y.length && x.every((v, i) => identical(v, y[i]));
    }
    case 'object': {
      if (!isDocument(a) || !isDocument(b)) return compareValues(a, b) === 0;
      const x = entriesOf(a);
      const y = entriesOf(b);
      return x.length === y.length && x.every(([name, v], i) => name === y[i]![0] && identical(v, y[i]![1]));
    }
    case 'double': {
      const x = Number((a as { valueOf(): unknown }).valueOf());
      const y = Number((b as { valueOf(): unknown }).valueOf());
      return Object.is(x, y) || x === y;
    }
    case 'binData': {
      const x = a as Binary;
      const y = b as Binary;
      return (
        bsonTypeOf(a) === bsonTypeOf(b) &&
        x.sub_type === y.sub_type &&
        Buffer.compare(x.buffer.subarray(0, x.position), y.buffer.subarray(0, y.position)) === 0
      );
    }
    default:
      return compareValues(a, b) === 0;
  }
}
