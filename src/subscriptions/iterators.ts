/**
 * `source` with `cleanup` run once when it ends: done, failed, or ended by its consumer. The
 * cleanup runs before `source.return()`, so that a generator waiting for its next change (an
 * inbox that `cleanup` closes) gets to finish instead of waiting for a change that never comes.
 */
export function endingWith<T>(source: AsyncIterator<T>, cleanup: () => void): AsyncIterableIterator<T> {
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    cleanup();
  };
  return {
    next: () =>
      source.next().then(
        (result) => {
          if (result.done) end();
          return result;
        },
        (error: unknown) => {
          end();
          throw error;
        },
      ),
    return() {
      end();
      return source.return?.() ?? Promise.resolve({ value: undefined, done: true });
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}
