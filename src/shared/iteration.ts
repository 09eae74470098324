/**
 * The result of an iterator that has ended. The live-update streams hand it out wherever they
 * end rather than making one each time: nothing reads more of it than `done`.
 */
export const ENDED: IteratorReturnResult<undefined> = Object.freeze({ value: undefined, done: true });

/**
 * Who is handed a stream's next result: the stream made of it, or the promise `next` answers.
 * Exactly one of the two is called, once, for each read.
 */
export interface ResultReader<T> {
  receive(result: IteratorResult<T>): void;
  receiveFailure(error: unknown): void;
}

/**
 * The one shape of the live-update streams (a subscriber's inbox, its changes, its balance, its
 * answers): a reader pulls one value at a time with `next`, as `for await` does; `return` and
 * `throw` alike end the stream at once (graphql-js, graphql-ws and graphql-sse end a stream
 * either way) and release what it holds, once, whoever ends it first; once it has ended, `next`
 * answers `ENDED` (or the stream's last words, `afterEnd`). A stream says how it gives its next
 * result (`readNext`) and what it lets go of when it ends (`release`); one that cannot go on
 * calls `end()` itself before it fails.
 *
 * A class rather than an async generator: each of thousands of idle subscriptions holds one
 * small object rather than a generator and its closures. A stream made of another's results
 * (`StreamOf`) reads it with `read`, handing over each result without a promise of its own, so
 * that one event reaches a subscriber through its inbox, its changes, its answers and its
 * connection with one promise (the one `next` answers) rather than one at each stream: each of
 * thousands of subscribers waits for its next event with that promise alone.
 */
export abstract class PullStream<T> implements AsyncIterableIterator<T> {
  private ended = false;

  /** Whether it has ended (by `return`, `throw`, or `end`). */
  protected get hasEnded(): boolean {
    return this.ended;
  }

  /** Hands its next result to `reader`, at once or once it has one; called only while it has not ended, one read at a time. */
  protected abstract readNext(reader: ResultReader<T>): void;

  /** Lets go of what it holds (its feed's listener, its source stream): called once, when it ends. */
  protected abstract release(): Promise<void> | void;

  /** What `next` answers once it has ended: `ENDED`, unless the stream has last words to give. */
  protected afterEnd(): Promise<IteratorResult<T>> {
    return Promise.resolve(ENDED);
  }

  next(): Promise<IteratorResult<T>> {
    if (this.ended) return this.afterEnd();
    return new Promise((receive, receiveFailure) => this.readNext({ receive, receiveFailure }));
  }

  /** `next()`, its result or failure handed to `reader` rather than answered as a promise. */
  read(reader: ResultReader<T>): void {
    if (this.ended) handOver(this.afterEnd(), reader);
    else this.readNext(reader);
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

/** What a stream makes of one result of its source (or of its failure): its own result, at once or later. */
export type Made<T> = IteratorResult<T> | Promise<IteratorResult<T>>;

/**
 * A stream made of another's results: each result of its source goes through `step` (and its
 * source's failure through `failed`), as `source.next().then(step, failed)` would, but handed
 * over as it comes rather than a promise step later.
 */
export abstract class StreamOf<S, T> extends PullStream<T> implements ResultReader<S> {
  /** The reader of the read under way. */
  private reader: ResultReader<T> | undefined;

  /** The result of this stream for a result of its source. */
  protected abstract step(result: IteratorResult<S>): Made<T>;

  /** The result of this stream for a failure of its source: by default, the same failure. */
  protected failed(error: unknown): Made<T> {
    throw error;
  }

  /** Reads `source`'s next result for `reader`, through `step`. */
  protected readThrough(source: AsyncIterator<S>, reader: ResultReader<T>): void {
    this.reader = reader;
    try {
      if (source instanceof PullStream) (source as PullStream<S>).read(this);
      else handOver(source.next(), this);
    } catch (error) {
      this.receiveFailure(error);
    }
  }

  receive(result: IteratorResult<S>): void {
    const reader = this.takeReader();
    let made: Made<T>;
    try {
      made = this.step(result);
    } catch (error) {
      return reader.receiveFailure(error);
    }
    handOver(made, reader);
  }

  receiveFailure(error: unknown): void {
    const reader = this.takeReader();
    let made: Made<T>;
    try {
      made = this.failed(error);
    } catch (failure) {
      return reader.receiveFailure(failure);
    }
    handOver(made, reader);
  }

  private takeReader(): ResultReader<T> {
    const reader = this.reader!;
    this.reader = undefined;
    return reader;
  }
}

/** Hands `made` to `reader`: at once, or once it settles. */
export function handOver<T>(made: Made<T>, reader: ResultReader<T>): void {
  if (made instanceof Promise) {
    made.then(
      (result: IteratorResult<T>) => reader.receive(result),
      (error: unknown) => reader.receiveFailure(error),
    );
  } else {
    reader.receive(made);
  }
}
