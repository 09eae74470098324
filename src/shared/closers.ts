/** Releases one resource. */
export type Closer = () => Promise<void> | void;

/**
 * The releases of what a service acquired, each pushed as soon as its resource is acquired, run
 * last in first out: by `stop()` and by a start that failed half-way alike, so a refused start
 * leaves nothing behind and both orders are the one order. Closing runs once: a second call gets
 * the first one's promise. Every closer runs even if one before it failed; the first failure is
 * then thrown.
 */
export class Closers {
  private readonly stack: Closer[] = [];
  private closing: Promise<void> | undefined;

  push(closer: Closer): void {
    if (this.closing !== undefined) throw new Error('closed already: nothing more can be acquired');
    this.stack.push(closer);
  }

  close(): Promise<void> {
    return (this.closing ??= this.closeAll());
  }

  private async closeAll(): Promise<void> {
    const failures: unknown[] = [];
    for (let closer = this.stack.pop(); closer !== undefined; closer = this.stack.pop()) {
      try {
        await closer();
      } catch (error) {
        failures.push(error);
      }
    }
    if (failures.length > 0) throw failures[0];
  }
}
