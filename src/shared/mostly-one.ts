/**
 * A set that most often holds one item, for what thousands of idle connections each keep: the
 * item in a field, and a `Set` only from the second on. One item costs no `Set` and no hash
 * table besides (about 230 bytes of heap for each of them).
 */
export class MostlyOne<T> {
  private one: T | undefined;
  private many: Set<T> | undefined;

  add(item: T): void {
    if (this.many !== undefined) this.many.add(item);
    else if (this.one === undefined || this.one === item) this.one = item;
    else {
      this.many = new Set([this.one, item]);
      this.one = undefined;
    }
  }

  delete(item: T): void {
    if (this.many !== undefined) this.many.delete(item);
    else if (this.one === item) this.one = undefined;
  }

  get size(): number {
    return this.many?.size ?? (this.one === undefined ? 0 : 1);
  }

  /** Its items as a new array: the set may change while they are gone through. */
  toArray(): T[] {
    if (this.many !== undefined) return [...this.many];
    return this.one === undefined ? [] : [this.one];
  }
}
