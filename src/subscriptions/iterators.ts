/**
 * `source` with `cleanup` run once when it ends: done, failed, or ended by its consumer. The
 * cleanup runs before `source.return()`, so that a generator waiting for its next change (an
 * inbox that `cleanup` closes) gets to finish instead of waiting for a change that never comes.
 */
export function endingWith<T>(source: AsyncGenerator<T>, cleanup: () => void): AsyncIterableIterator<T> {
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    cleanup();
  };
  return {
    async next() {
      try {
        const result = await source.next();
        if (result.done) end();
        return result;
      } catch (error) {
        end();
        throw error;
      }
    },
    async return() {
      end();
      return source.return(undefined);
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}
