import { describe, expect, it } from 'vitest';

import { ENDED, PullStream } from '../../../src/shared/iteration.js';
import { Inbox } from '../../../src/subscriptions/inbox.js';

/** Counts up from 1, holding a resource it lets go of when it ends. */
class Counter extends PullStream<number> {
  released = 0;
  pulled = 0;

  protected pull(): Promise<IteratorResult<number>> {
    this.pulled += 1;
    return Promise.resolve({ value: this.pulled, done: false });
  }

  protected release(): void {
    this.released += 1;
  }

  /** Cannot go on: it ends itself, then fails. */
  fail(): never {
    void this.end();
    throw new Error('cannot go on');
  }
}

describe('the one shape of the live-update streams', () => {
  it.each(['return', 'throw'] as const)('ends at %s(): what it holds is released once, and next() answers ENDED', async (how) => {
    const counter = new Counter();
    expect(await counter.next()).toEqual({ value: 1, done: false });
    expect(await counter[how]()).toBe(ENDED);
    expect(await counter.return()).toBe(ENDED);
    expect(await counter.throw()).toBe(ENDED);
    expect(await counter.next()).toBe(ENDED);
    expect([counter.released, counter.pulled]).toEqual([1, 1]);
  });

  it('is its own async iterator: for await ends it when the loop breaks', async () => {
    const counter = new Counter();
    const seen: number[] = [];
    for await (const value of counter) {
      seen.push(value);
      if (value === 3) break;
    }
    expect(seen).toEqual([1, 2, 3]);
    expect(counter.released).toBe(1);
  });

  it('is released once when it ends itself and is then returned', async () => {
    const counter = new Counter();
    expect(() => counter.fail()).toThrow('cannot go on');
    await counter.return();
    expect(counter.released).toBe(1);
  });

  it.each(['return', 'throw'] as const)('ends an inbox at %s(), even while its reader waits, and stops its feed once', async (how) => {
    const inbox = new Inbox<number>(2);
    let stopped = 0;
    inbox.whenClosed(() => (stopped += 1));
    const waiting = inbox.next();
    await inbox[how]();
    expect(await waiting).toEqual(ENDED);
    inbox.push(1);
    expect(await inbox.next()).toBe(ENDED);
    inbox.close();
    expect(stopped).toBe(1);
  });
});
