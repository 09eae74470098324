/**
 * The result of an iterator that has ended. The live-update streams hand it out wherever they
 * end rather than making one each time: nothing reads more of it than `done`.
 */
export const ENDED: IteratorReturnResult<undefined> = Object.freeze({ value: undefined, done: true });

/**
 * The one shape of the live-update streams (a subscriber's inbox, its changes, its balance, its
 * answers): a reader pulls one value at a time with `next`, as `for await` does; `return` and
 * `throw` alike end the stream at once (graphql-js, graphql-ws and graphql-sse end a stream
 * either way) and release what it holds, once, whoever ends it first; once it has ended, `next`
 * answers `ENDED` (or the stream's last words, `afterEnd`). A stream says how it takes its next value (`pull`) and what it lets go of
 * when it ends (`release`); one that cannot go on calls `end()` itself before it rejects.
 *
 * A class rather than an async generator: each of thousands of idle subscriptions holds one
 * small object rather than a generator and its closures, and one event reaching every
 * subscriber of a user costs no promise jobs of the generator's own.
 */
export abstract class PullStream<T> implements AsyncIterableIterator<T> {
  private ended = false;

  /** Whether it has ended (by `return`, `throw`, or `end`). */
  protected get hasEnded(): boolean {
    return this.ended;
  }

  /** Takes the next value; called only while it has not ended. */
  protected abstract pull(): Promise<IteratorResult<T>>;

  /** Lets go of what it holds (its feed's listener, its source stream): called once, when it ends. */
  protected abstract release(): Promise<void> | void;

  /** What `next` answers once it has ended: `ENDED`, unless the stream has last words to give. */
  protected afterEnd(): Promise<IteratorResult<T>> {
    return Promise.resolve(ENDED);
  }

  next(): Promise<IteratorResult<T>> {
    return this.ended ? this.afterEnd() : this.pull();
  }

  async return(): Promise<IteratorResult<T>> {
    await this.end();
    return ENDED;
  }

  /** Ends it as `return` does. */
  throw(): Promise<IteratorResult<T>> {
    return this.return();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** Ends it, once: what it holds is released; a second call does nothing. */
  protected end(): Promise<void> | void {
    if (this.ended) return;
    this.ended = true;
    return this.release();
  }
}
