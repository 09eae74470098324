import { describe, expect, it } from 'vitest';

import { ENDED, type Made, PullStream, type ResultReader, StreamOf } from '../../../src/shared/iteration.js';
import { Inbox } from '../../../src/subscriptions/inbox.js';

/** Counts up from 1, holding a resource it lets go of when it ends. */
class Counter extends PullStream<number> {
  released = 0;
  pulled = 0;

  protected readNext(reader: ResultReader<number>): void {
    this.pulled += 1;
    reader.receive({ value: this.pulled, done: false });
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

/** Each value of its source, doubled; a source's failure becomes the value -1. */
class Doubled extends StreamOf<unknown, number> {
  steps = 0;

  constructor(private readonly source: AsyncIterator<unknown>) {
    super();
  }

  protected readNext(reader: ResultReader<number>): void {
    this.readThrough(this.source, reader);
  }

  protected release(): void {}

  protected step(result: IteratorResult<unknown>): Made<number> {
    this.steps += 1;
    if (result.done) return ENDED;
    const value = result.value as number;
    if (value < 0) throw new Error(`cannot double ${value}`);
    return { value: value * 2, done: false };
  }

  protected override failed(): Made<number> {
    return { value: -1, done: false };
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

  it('hands a value through a chain of streams over an inbox in the step that pushes it, with the one promise next() answers', async () => {
    const inbox = new Inbox<number>(2);
    const first = new Doubled(inbox);
    const chain = new Doubled(new Doubled(first));
    let got: IteratorResult<number> | undefined;
    void chain.next().then((result) => (got = result));
    inbox.push(1);
    expect(first.steps).toBe(1);
    await null;
    expect(got).toEqual({ value: 8, done: false });
  });

  it('reads through a chain as next().then(step, failed) would: a step that throws fails the read, a failure its reader turns into a value is that value', async () => {
    const inbox = new Inbox<number>(2);
    const doubled = new Doubled(inbox);
    const failing = doubled.next();
    inbox.push(-1);
    await expect(failing).rejects.toThrow('cannot double -1');
    const twice = new Doubled(new Doubled(inbox));
    const turned = twice.next();
    inbox.push(-1);
    expect(await turned).toEqual({ value: -1, done: false });

    async function* failingSource(): AsyncGenerator<number> {
      yield 3;
      throw new Error('lost');
    }
    const overGenerator = new Doubled(failingSource());
    expect(await overGenerator.next()).toEqual({ value: 6, done: false });
    expect(await overGenerator.next()).toEqual({ value: -1, done: false });
    expect(await overGenerator.next()).toEqual(ENDED);
  });

  it('hands a queued value, and the end of an inbox closed while its reader waits, through the chain too', async () => {
    const inbox = new Inbox<number>(2);
    const doubled = new Doubled(new Doubled(inbox));
    inbox.push(5);
    expect(await doubled.next()).toEqual({ value: 20, done: false });
    const waiting = doubled.next();
    inbox.close();
    expect(await waiting).toBe(ENDED);
  });
});
