import { ENDED, PullStream, type ResultReader } from '../shared/iteration.js';

/** In place of the changes an inbox had to drop, or that never reached it: its reader must catch up another way. */
export const MISSED = Symbol('changes missed');
export type Missed = typeof MISSED;

/**
 * One subscription's queue of changes, filled by a change feed and read as a `PullStream`.
 * It holds at most `capacity` changes: a reader that falls that far behind (a client that does
 * not read its socket) gets `MISSED` in their place rather than growing the queue without end.
 * `close()` (or `return`, or `throw`) ends it at once, even while its reader waits.
 */
export class Inbox<T> extends PullStream<T | Missed> {
  private queue: (T | Missed)[] = [];
  /** Its reader while it waits for a change: handed the next one in `push` itself. */
  private waiting: ResultReader<T | Missed> | undefined;
  private stop: (() => void) | undefined;

  constructor(private readonly capacity: number) {
    super();
  }

  /** Runs `stop` once it closes (at once when it is closed already): its feed stops filling it. */
  whenClosed(stop: () => void): void {
    if (this.hasEnded) stop();
    else this.stop = stop;
  }

  push(item: T | Missed): void {
    if (this.hasEnded) return;
    if (this.waiting) {
      const reader = this.waiting;
      this.waiting = undefined;
      reader.receive({ value: item, done: false });
    } else if (item === MISSED || this.queue.length >= this.capacity) {
      this.queue = [MISSED];
    } else {
      this.queue.push(item);
    }
  }

  close(): void {
    void this.end();
  }

  protected readNext(reader: ResultReader<T | Missed>): void {
    if (this.queue.length > 0) reader.receive({ value: this.queue.shift()!, done: false });
    else this.waiting = reader;
  }

  protected release(): void {
    const { waiting, stop } = this;
    this.queue = [];
    this.waiting = undefined;
    this.stop = undefined;
    waiting?.receive(ENDED);
    stop?.();
  }
}
